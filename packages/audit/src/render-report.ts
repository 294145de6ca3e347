import type { FleetRunSummary, HandoffSummary, ReportModel } from './report-model.js';

const OUTCOME_COLOR = { 'handed-off': '#2e7d32', failed: '#c62828', aborted: '#ef8f00', tampered: '#6a1b9a' } as const;
const TIMELINE_ROWS = 24;
const WINDOW_ROWS = 40;

/**
 * Renders the audit report as one self-contained HTML page: inline CSS and SVG, no scripts, no fonts, no network
 * fetches. Sections: verification result, totals, a timeline of handoffs across clusters, each credential's live
 * window against its readiness wait, and a table of recent handoffs with failures highlighted.
 */
export function renderReport(model: ReportModel): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>baton handoff audit — ${esc(model.log)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>Handoff audit report</h1>
<p class="meta">Log <code>${esc(model.log)}</code> · generated ${esc(model.generatedAt)}</p>
</header>
${verificationSection(model)}
${totalsSection(model)}
<section id="timeline"><h2>Handoffs across clusters</h2>
<p class="hint">Each mark is one handoff, from start to finish, on its cluster’s row (the ${model.recent.length} most recent).</p>
${timelineSvg(model.recent)}
</section>
<section id="credentials"><h2>Credential live windows against readiness waits</h2>
<p class="hint">Per handoff, from the moment the bootstrap credential was issued: the blue bar is the wait until the pull
controller was ready, the orange bar is how long the credential could be used (until revoked, or until it expired if it
never was). Rows on red failed or were aborted.</p>
${windowsSvg(model.recent)}
</section>
${fleetSection(model.fleetRuns)}
${tableSection(model.recent)}
<footer>Check this log yourself: <code>baton audit verify ${esc(model.log)} --keys trusted-keys.yaml</code></footer>
</body>
</html>
`;
}

function verificationSection(model: ReportModel): string {
  const v = model.verification;
  if (!v) {
    return `<section id="verification" class="banner unknown"><h2>Not verified</h2><p>No trusted keys were given, so signatures and checkpoints were not checked. Run <code>baton audit report --keys &lt;file&gt;</code>.</p></section>`;
  }
  if (v.ok) {
    const warn = v.warnings.map((w) => `<li>${esc(w)}</li>`).join('');
    return `<section id="verification" class="banner ok"><h2>Verified</h2>
<p>All ${v.entries.toLocaleString('en')} entries are signed by trusted keys and covered by ${v.trustedCheckpoints.toLocaleString('en')} signed checkpoints for <code>${esc(v.origin)}</code>; the newest covers ${v.checkpointedSize.toLocaleString('en')} entries with root <code>${esc(v.root ?? '')}</code>.</p>${warn ? `<ul>${warn}</ul>` : ''}</section>`;
  }
  const first = v.failures[0]!;
  const more =
    v.failureCount > 1
      ? `<p>${v.failureCount - 1} more failure(s); run <code>baton audit verify</code> for the list.</p>`
      : '';
  const where = first.index !== undefined ? ` at entry ${first.index}` : '';
  return `<section id="verification" class="banner failed"><h2>Verification failed: ${esc(first.kind)}${where}</h2>
<p>${esc(first.message)}</p>${more}</section>`;
}

function totalsSection(model: ReportModel): string {
  const t = model.totals;
  const live = model.liveSeconds;
  const card = (label: string, value: string, cls = '') =>
    `<div class="card ${cls}"><div class="v">${value}</div><div class="l">${label}</div></div>`;
  return `<section id="totals" class="cards">
${card('handoffs', t.handoffs.toLocaleString('en'))}
${card('handed off', t.handedOff.toLocaleString('en'), 'good')}
${card('failed', t.failed.toLocaleString('en'), t.failed > 0 ? 'bad' : '')}
${card('aborted', t.aborted.toLocaleString('en'), t.aborted > 0 ? 'warn' : '')}
${card('clusters', model.clusters.length.toLocaleString('en'))}
${live ? card('credential live, median', `${fmtSeconds(live.median)}`) : ''}
${live ? card('credential live, p95', `${fmtSeconds(live.p95)}`) : ''}
${live ? card('credential live, longest', `${fmtSeconds(live.max)}`, live.max >= 600 ? 'bad' : '') : ''}
</section>`;
}

function timelineSvg(recent: readonly HandoffSummary[]): string {
  if (recent.length === 0) return '<p>No handoffs.</p>';
  const lastSeen = new Map<string, number>();
  for (const h of recent) lastSeen.set(h.cluster, Math.max(lastSeen.get(h.cluster) ?? 0, h.finishedMs));
  const rows = [...lastSeen.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TIMELINE_ROWS)
    .map(([c]) => c)
    .sort();
  const shown = recent.filter((h) => rows.includes(h.cluster));
  const t0 = Math.min(...shown.map((h) => h.startedMs));
  const t1 = Math.max(...shown.map((h) => h.finishedMs));
  const left = 190;
  const width = 1100;
  const rowH = 18;
  const height = rows.length * rowH + 30;
  const x = (t: number) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - 10);
  const marks = shown
    .map((h) => {
      const y = rows.indexOf(h.cluster) * rowH + 4;
      const w = Math.max(4, x(h.finishedMs) - x(h.startedMs));
      const cls = h.outcome === 'handed-off' ? '' : ' class="failed"';
      return `<rect${cls} x="${x(h.startedMs).toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${rowH - 7}" rx="2" fill="${OUTCOME_COLOR[h.outcome]}"><title>${esc(`#${h.index} ${h.cluster} ${h.outcome}${h.failedStep ? ` at ${h.failedStep}` : ''} — ${iso(h.startedMs)} to ${iso(h.finishedMs)}`)}</title></rect>`;
    })
    .join('');
  const labels = rows
    .map((c, i) => `<text x="${left - 8}" y="${i * rowH + 14}" text-anchor="end">${esc(c)}</text>`)
    .join('');
  const grid = rows
    .map((_, i) => `<line x1="${left}" x2="${width - 10}" y1="${i * rowH + 9.5}" y2="${i * rowH + 9.5}" class="grid"/>`)
    .join('');
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const t = t0 + f * (t1 - t0);
      return `<text x="${x(t).toFixed(1)}" y="${height - 6}" text-anchor="middle" class="tick">${esc(iso(t).slice(0, 16))}</text>`;
    })
    .join('');
  return `<svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="timeline of handoffs across clusters">${grid}${labels}${marks}${ticks}</svg>
${legend([
  ['handed off', OUTCOME_COLOR['handed-off']],
  ['failed', OUTCOME_COLOR.failed],
  ['aborted', OUTCOME_COLOR.aborted],
])}`;
}

function windowsSvg(recent: readonly HandoffSummary[]): string {
  const rows = recent.filter((h) => h.credential).slice(-WINDOW_ROWS);
  if (rows.length === 0) return '<p>No credentials were issued.</p>';
  const liveEnd = (h: HandoffSummary) => {
    const c = h.credential!;
    return Math.min(c.revokedMs ?? c.expiresMs, c.expiresMs);
  };
  const span = Math.max(...rows.map((h) => Math.max(liveEnd(h), h.readyMs ?? 0) - h.credential!.issuedMs), 1000);
  const left = 260;
  const width = 1100;
  const rowH = 20;
  const height = rows.length * rowH + 30;
  const x = (ms: number) => left + (ms / span) * (width - left - 70);
  const body = rows
    .map((h, i) => {
      const c = h.credential!;
      const y = i * rowH;
      const failed = h.outcome !== 'handed-off';
      const band = failed ? `<rect class="failed-row" x="0" y="${y}" width="${width}" height="${rowH}"/>` : '';
      const live = liveEnd(h) - c.issuedMs;
      const neverRevoked = c.revokedMs === null;
      const liveBar = `<rect x="${left}" y="${y + 3}" width="${Math.max(2, x(live) - left).toFixed(1)}" height="8" fill="${neverRevoked ? '#c62828' : '#f57c00'}"><title>${esc(`credential usable for ${fmtSeconds(live / 1000)}${neverRevoked ? ' (never revoked: lived until expiry)' : ''}`)}</title></rect>`;
      const wait = h.readyMs !== undefined ? h.readyMs - c.issuedMs : undefined;
      const waitBar =
        wait !== undefined
          ? `<rect x="${left}" y="${y + 12}" width="${Math.max(2, x(wait) - left).toFixed(1)}" height="5" fill="#1565c0"><title>${esc(`controller ready after ${fmtSeconds(wait / 1000)}`)}</title></rect>`
          : '';
      const label = `<text x="${left - 8}" y="${y + 14}" text-anchor="end"${failed ? ' class="bad"' : ''}>${esc(`#${h.index} ${h.cluster}`)}${failed ? ` ✗ ${esc(h.failedStep ?? h.outcome)}` : ''}</text>`;
      const value = `<text x="${(x(live) + 6).toFixed(1)}" y="${y + 11}" class="tick">${esc(fmtSeconds(live / 1000))}</text>`;
      return band + label + liveBar + waitBar + value;
    })
    .join('');
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map(
      (f) =>
        `<text x="${x(f * span).toFixed(1)}" y="${height - 6}" text-anchor="middle" class="tick">+${esc(fmtSeconds((f * span) / 1000))}</text>`,
    )
    .join('');
  return `<svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="credential live windows against readiness waits">${body}${ticks}</svg>
${legend([
  ['credential live (issued → revoked)', '#f57c00'],
  ['never revoked (lived until expiry)', '#c62828'],
  ['readiness wait (issued → controller ready)', '#1565c0'],
])}`;
}

function tableSection(recent: readonly HandoffSummary[]): string {
  const rows = [...recent]
    .reverse()
    .map((h) => {
      const c = h.credential;
      const proof = h.revocationProven === undefined ? '—' : h.revocationProven ? '✓ proven' : '✗ not proven';
      return `<tr class="${h.outcome === 'handed-off' ? '' : 'failed'}"><td>${h.index}</td><td>${esc(iso(h.finishedMs))}</td><td>${esc(h.cluster)}</td><td><span class="badge ${h.outcome}">${esc(h.outcome)}</span></td><td>${esc(h.failedStep ?? '')}</td><td>${esc(h.actor)}</td><td class="num">${c ? fmtSeconds(c.liveSeconds) : '—'}</td><td class="num">${c && h.readyMs !== undefined ? fmtSeconds((h.readyMs - c.issuedMs) / 1000) : '—'}</td><td>${proof}</td><td><code>${esc(h.runId)}</code></td></tr>`;
    })
    .join('\n');
  return `<section id="handoffs"><h2>Recent handoffs</h2>
<div class="scroll"><table><thead><tr><th>#</th><th>finished (UTC)</th><th>cluster</th><th>outcome</th><th>failed step</th><th>actor</th><th>credential live</th><th>readiness wait</th><th>revocation</th><th>run</th></tr></thead>
<tbody>
${rows}
</tbody></table></div></section>`;
}

function fleetSection(runs: readonly FleetRunSummary[]): string {
  if (runs.length === 0) return '';
  const body = [...runs]
    .reverse()
    .map((r) => {
      const outcome = r.outcome ?? 'running (no fleet-finished event)';
      const cls = r.outcome === 'succeeded' ? 'handed-off' : r.outcome === 'partial' ? 'aborted' : 'failed';
      const budget = `failed ${r.budget.failed ?? '?'} of budget ${r.budget.allowed}`;
      const waves = r.waves
        .map((w) => {
          const names = w.clusters
            .map(
              (c) =>
                `<span class="c ${esc(c.status ?? 'pending')}" title="${esc(c.status ?? 'pending')}">${esc(c.name)}</span>`,
            )
            .join(' ');
          return `<tr class="${w.failed > 0 ? 'failed' : ''}"><td>${w.index + 1}</td><td>${esc(w.name)}</td><td class="num">${w.clusters.length}</td><td class="num">${w.handedOff}</td><td class="num">${w.failed}</td><td class="num">${w.notStarted}</td><td class="names">${names}</td></tr>`;
        })
        .join('\n');
      return `<div class="fleet-run"><h3>${esc(r.fleet)} <span class="badge ${cls}">${esc(outcome)}</span></h3>
<p class="meta">fleet run <code>${esc(r.fleetRunId)}</code> · ${esc(r.engine)} engine${r.shard ? ` · shard ${esc(r.shard)}` : ''} · concurrency ${r.concurrency} · ${esc(budget)} · ${esc(r.actor)} · ${esc(iso(r.startedMs))}${r.finishedMs ? ` to ${esc(iso(r.finishedMs))}` : ''}</p>
<table><thead><tr><th>wave</th><th>name</th><th>clusters</th><th>handed off</th><th>failed</th><th>not started</th><th>clusters</th></tr></thead><tbody>
${waves}
</tbody></table></div>`;
    })
    .join('\n');
  return `<section id="fleet"><h2>Fleet rollouts</h2>
<p class="hint">Each fleet run, wave by wave in the order they ran: how many clusters each wave handed off, failed or never started (the failure budget was spent first).</p>
${body}</section>`;
}

function legend(items: readonly (readonly [string, string])[]): string {
  return `<p class="legend">${items.map(([label, color]) => `<span><i style="background:${color}"></i>${esc(label)}</span>`).join('')}</p>`;
}

function fmtSeconds(s: number): string {
  if (s < 120) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const rest = Math.round(s % 60);
  return rest === 0 ? `${Math.floor(s / 60)} min` : `${Math.floor(s / 60)} min ${rest} s`;
}

/** UTC time to the second, as a reviewer reads it: `2026-01-17 12:14:30`. */
function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** Escapes text for HTML element and attribute content. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const CSS = `
:root{color-scheme:light;--fg:#1d2330;--muted:#5f6b7a;--line:#e3e7ee;--bad:#c62828}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);margin:0 auto;max-width:1180px;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:17px;margin:0 0 8px}
.meta,.hint{color:var(--muted);margin:0 0 12px}
code{font:12px/1.3 ui-monospace,"DejaVu Sans Mono",monospace;background:#f3f5f8;padding:1px 4px;border-radius:3px;word-break:break-all}
section{margin:22px 0}
.banner{border-radius:8px;padding:14px 18px;border:1px solid}
.banner.ok{background:#e8f5e9;border-color:#a5d6a7}.banner.failed{background:#ffebee;border-color:#ef9a9a}.banner.unknown{background:#f3f5f8;border-color:var(--line)}
.banner.failed h2{color:var(--bad)}.banner p{margin:4px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(135px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 12px}.card .v{font-size:22px;font-weight:600}.card .l{color:var(--muted);font-size:12px}
.card.good .v{color:#2e7d32}.card.bad .v{color:var(--bad)}.card.warn .v{color:#ef8f00}
svg{display:block;border:1px solid var(--line);border-radius:8px;background:#fff}
svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:var(--fg)}svg text.tick{fill:var(--muted);font-size:10px}svg text.bad{fill:var(--bad);font-weight:600}
svg .grid{stroke:#eef1f5}svg .failed-row{fill:#ffebee}
.legend{color:var(--muted);font-size:12px;margin:6px 0}.legend span{margin-right:16px}.legend i{display:inline-block;width:12px;height:10px;margin-right:5px;border-radius:2px;vertical-align:-1px}

.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:12.5px}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);white-space:nowrap}
th{background:#f7f8fa;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.failed td{background:#fff3f3}
.badge{border-radius:10px;padding:1px 8px;font-size:11.5px;color:#fff}.badge.handed-off{background:#2e7d32}.badge.failed{background:var(--bad)}.badge.aborted{background:#ef8f00}.badge.tampered{background:#6a1b9a}
.fleet-run{margin:12px 0 18px}.fleet-run h3{font-size:15px;margin:0 0 4px}
td.names{white-space:normal}.c{display:inline-block;border-radius:3px;padding:0 4px;margin:1px;font-size:11.5px;background:#f3f5f8}
.c.handed-off,.c.already-handed-off{background:#e8f5e9}.c.failed,.c.aborted{background:#ffebee;color:var(--bad)}.c.not-started{color:var(--muted);text-decoration:line-through}
footer{color:var(--muted);margin-top:28px;border-top:1px solid var(--line);padding-top:12px}
`;
