// @baton/testenv/git: a real Git server (git http-backend behind Basic auth), on loopback or at a bed's node address.
export type { GitServer, GitServerUser, StartGitServerOptions } from './git-server.js';
export { startGitServer } from './git-server.js';
