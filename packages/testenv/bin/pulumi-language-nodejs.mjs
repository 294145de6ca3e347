// The test bed's Node.js language host for the `pulumi` CLI built from Go modules: the module proxy does not serve
// Pulumi's own host, so without this a `runtime: nodejs` project cannot run from a shell here. Real users have
// Pulumi's. It answers GetPluginInfo, GetRequiredPlugins and Run (what the SDK's own in-process host answers for
// Automation API); every other RPC answers UNIMPLEMENTED, which the CLI handles.
//
// The CLI starts it as `pulumi-language-nodejs [--logtostderr] [-v=N] [--tracing URL] <engine address>` and reads the
// gRPC port from the first line of stdout. Run starts `@pulumi/pulumi/cmd/run` (the program's own copy, so the program
// and the runner share the SDK's runtime state) under tsx, so TypeScript and ESM programs load without a build step;
// `runtime.options.typescript: false` in Pulumi.yaml turns that off, as it turns off ts-node in Pulumi's own host
// (a program compiled with tsc then runs as plain JavaScript, under nothing but its own `nodeargs`).
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';

const ownRequire = createRequire(import.meta.url);
const sdkRequire = createRequire(ownRequire.resolve('@pulumi/pulumi/package.json'));
const grpc = sdkRequire('@grpc/grpc-js');
const services = sdkRequire('./proto/language_grpc_pb.js');
const languagePb = sdkRequire('./proto/language_pb.js');
const pluginPb = sdkRequire('./proto/plugin_pb.js');
const sdkVersion = sdkRequire('./package.json').version;
const tsxLoader = import.meta.resolve('tsx');

/**
 * `pnpm bench:pulumi` splits the seconds before the mint: with BATON_LANGUAGE_HOST_TIMINGS set to a file, the host
 * appends when its process started and when Run arrived (epoch ms, one JSON object a line).
 */
const timingsPath = process.env.BATON_LANGUAGE_HOST_TIMINGS;
function recordTiming(event, at = Date.now()) {
  if (timingsPath) appendFileSync(timingsPath, `${JSON.stringify({ event, at: Math.round(at) })}\n`);
}
recordTiming('host-started', performance.timeOrigin);

/** Exit code of `cmd/run` when it has already shown the user the error. */
const BAIL_EXIT_CODE = 32;

const engineAddress = process.argv.slice(2).findLast((arg) => !arg.startsWith('-'));
if (!engineAddress) {
  process.stderr.write('pulumi-language-nodejs: missing the engine address (the last argument)\n');
  process.exit(2);
}

/** Programs started by Run that are still running; signals to the host reach them too. */
const children = new Set();

/** The `@pulumi/pulumi` the program itself resolves, else the host's own. */
function runnerFor(programDirectory) {
  try {
    return createRequire(join(programDirectory, 'package.json')).resolve('@pulumi/pulumi/cmd/run');
  } catch {
    return ownRequire.resolve('@pulumi/pulumi/cmd/run');
  }
}

/** `runtime.options.nodeargs` of Pulumi.yaml, split on whitespace as Pulumi's own host does. */
function nodeArgs(info) {
  const options = info?.getOptions()?.toJavaScript() ?? {};
  return typeof options.nodeargs === 'string' ? options.nodeargs.split(/\s+/).filter(Boolean) : [];
}

/** False when Pulumi.yaml says `runtime.options.typescript: false`. */
function isTypeScript(info) {
  return info?.getOptions()?.toJavaScript()?.typescript !== false;
}

function runArgs(request) {
  const info = request.getInfo();
  const programDirectory = resolve(info?.getProgramDirectory() || request.getPwd() || process.cwd());
  const entryPoint = info?.getEntryPoint() || request.getProgram() || '.';
  const args = [
    ...nodeArgs(info),
    ...(isTypeScript(info) ? ['--import', tsxLoader] : []),
    runnerFor(programDirectory),
    '--monitor',
    request.getMonitorAddress(),
    '--engine',
    engineAddress,
    '--organization',
    request.getOrganization(),
    '--project',
    request.getProject(),
    '--stack',
    request.getStack(),
    '--pwd',
    programDirectory,
    '--root-directory',
    resolve(info?.getRootDirectory() || programDirectory),
    '--parallel',
    String(request.getParallel()),
  ];
  if (request.getDryrun()) args.push('--dry-run');
  args.push(entryPoint);
  const config = Object.fromEntries(request.getConfigMap().toArray());
  const env = {
    ...process.env,
    PULUMI_CONFIG: JSON.stringify(config),
    PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(request.getConfigsecretkeysList()),
  };
  return { args, env, cwd: programDirectory };
}

function run(call, callback) {
  recordTiming('run');
  let spec;
  try {
    spec = runArgs(call.request);
  } catch (err) {
    callback(null, new languagePb.RunResponse().setError(`cannot start the program: ${err.message}`));
    return;
  }
  // The program's output goes where the host's goes: the CLI shows stdout as info and stderr as errors.
  const child = spawn(process.execPath, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  child.on('error', (err) => {
    children.delete(child);
    callback(null, new languagePb.RunResponse().setError(`cannot start node for the program: ${err.message}`));
  });
  child.on('exit', (code, signal) => {
    children.delete(child);
    const response = new languagePb.RunResponse();
    if (code === BAIL_EXIT_CODE) response.setBail(true);
    else if (signal) response.setError(`the program was stopped by ${signal}`);
    else if (code !== 0) response.setError(`the program exited with code ${code}`);
    callback(null, response);
  });
}

const server = new grpc.Server({ 'grpc.max_receive_message_length': 400 * 1024 * 1024 });
server.addService(services.LanguageRuntimeService, {
  getPluginInfo: (_call, callback) => callback(null, new pluginPb.PluginInfo().setVersion(sdkVersion)),
  getRequiredPlugins: (_call, callback) => callback(null, new languagePb.GetRequiredPluginsResponse()),
  run,
});
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    process.stderr.write(`pulumi-language-nodejs: cannot listen on 127.0.0.1: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`${port}\n`);
});

function shutDown(signal) {
  for (const child of children) child.kill(signal);
  server.forceShutdown();
  process.exit(0);
}

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => shutDown(signal));

// As Pulumi's own plugins do (rpcutil.Healthcheck): when the engine is gone (a killed CLI), stop, and stop the
// programs, instead of lingering as orphans.
const [engineHost, enginePort] = [
  engineAddress.slice(0, engineAddress.lastIndexOf(':')),
  engineAddress.split(':').pop(),
];
let engineMisses = 0;
const engineAnswers = () =>
  new Promise((resolve) => {
    const socket = connect({ host: engineHost || '127.0.0.1', port: Number(enginePort) });
    const end = (answered) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(1000);
    socket.once('connect', () => end(true));
    socket.once('error', () => end(false));
    socket.once('timeout', () => end(false));
  });
setInterval(async () => {
  if (await engineAnswers()) engineMisses = 0;
  else if (++engineMisses >= 3) shutDown('SIGTERM');
}, 1000).unref();
