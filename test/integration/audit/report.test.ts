import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildReport } from '@baton/audit';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  CHROMIUM_ARGS,
  copyLog,
  fixtureKeyFile,
  fixtureTrustedKeys,
  playwright,
  ROOT,
  readLines,
  removeDir,
  runCli,
  TRUSTED_KEYS,
  tempDir,
  writeLines,
} from './helpers.js';

let dir: string;
let log: string;
let browser: Browser;

beforeAll(async () => {
  dir = await tempDir();
  log = join(dir, 'fleet.jsonl');
  const synth = await runCli([
    'audit',
    'synth',
    '--count',
    '400',
    '--key',
    await fixtureKeyFile(dir),
    '-o',
    log,
    '--origin',
    'test.baton.dev/audit',
  ]);
  expect(synth, synth.stderr).toMatchObject({ code: 0 });
  const { chromium } = await playwright();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await removeDir(dir);
});

/** Opens a report in Chromium and records every request the page makes. */
async function open(file: string) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  return { page, requests };
}

describe('the HTML report in headless Chromium', () => {
  test('is one self-contained page: verified banner, timeline, credential windows, failures highlighted', async () => {
    const file = join(dir, 'report.html');
    const r = await runCli(['audit', 'report', log, '-o', file, '--keys', TRUSTED_KEYS, '--recent', '120']);
    expect(r, r.stderr).toMatchObject({ code: 0 });
    expect(r.stderr).toMatch(/wrote .*report\.html: 400 handoffs, verified/);
    const { page, requests } = await open(file);
    // Nothing but the page itself: no scripts, fonts, images or CDNs.
    expect(requests).toEqual([pathToFileURL(file).href]);
    await expect(page.locator('#verification h2').textContent()).resolves.toBe('Verified');
    expect(await page.locator('#verification').getAttribute('class')).toContain('ok');
    expect(await page.locator('#verification').textContent()).toMatch(/All 400 entries are signed by trusted keys/);
    expect(await page.locator('#totals .card').first().textContent()).toMatch(/400\s*handoffs/);

    // The timeline has one mark per recent handoff; failed and aborted ones are marked as such.
    const marks = await page.locator('#timeline svg rect').count();
    expect(marks).toBeGreaterThan(50);
    const rows = await page.locator('#handoffs tbody tr').count();
    expect(rows).toBe(120);
    const failedRows = await page.locator('#handoffs tbody tr.failed').count();
    const failedOutcomes = await page.locator('#handoffs tbody tr .badge:not(.handed-off)').count();
    expect(failedRows).toBe(failedOutcomes);
    expect(failedRows).toBeGreaterThan(0);
    const failedBg = await page
      .locator('#handoffs tbody tr.failed td')
      .first()
      .evaluate(
        // Runs in Chromium; the tests' TypeScript has no DOM lib (it would clash with Node's webcrypto types).
        (td) => (globalThis as unknown as BrowserGlobals).getComputedStyle(td).backgroundColor,
      );
    expect(failedBg).toBe('rgb(255, 243, 243)');

    // Each credential window is drawn with its readiness wait; failed rows sit on a red band.
    expect(
      await page
        .locator('#credentials svg text')
        .filter({ hasText: /^#\d+ / })
        .count(),
    ).toBe(40);
    expect(await page.locator('#credentials svg rect.failed-row').count()).toBeGreaterThan(0);
    expect(await page.locator('#credentials svg rect[fill="#1565c0"]').count()).toBeGreaterThan(20);

    await mkdir(join(ROOT, 'test-results'), { recursive: true });
    await page.screenshot({ path: join(ROOT, 'test-results/audit-report.png'), fullPage: false });
    await page.locator('#credentials').screenshot({ path: join(ROOT, 'test-results/audit-report-credentials.png') });
    await page.close();
  });

  test('a tampered log shows the failure first, with its kind and entry', async () => {
    const tampered = join(dir, 'tampered.jsonl');
    await copyLog(log, tampered);
    const lines = await readLines(tampered);
    lines[123] = lines[123]!.replace('"subject":"cluster/', '"subject":"cluster/evil-');
    await writeLines(tampered, lines);
    const { html } = await buildReport(tampered, {
      keys: await fixtureTrustedKeys(),
      now: () => new Date('2027-01-01T00:00:00Z'),
    });
    const file = join(dir, 'tampered.html');
    await writeFile(file, html);
    const { page, requests } = await open(file);
    expect(requests).toHaveLength(1);
    expect(await page.locator('#verification h2').textContent()).toBe('Verification failed: edited at entry 123');
    expect(await page.locator('#verification').getAttribute('class')).toContain('failed');
    expect(await page.locator('#verification p').first().textContent()).toMatch(
      /tampered\.jsonl:124: entry 123 has envelope subject/,
    );
    // Text from the log is escaped, never interpreted as markup.
    expect(await readFile(file, 'utf8')).not.toMatch(/<script/i);
    await page.close();
  });

  test('a report without keys says it is not verified', async () => {
    const { html } = await buildReport(log, { now: () => new Date('2027-01-01T00:00:00Z'), recent: 10 });
    const file = join(dir, 'unverified.html');
    await writeFile(file, html);
    const { page } = await open(file);
    expect(await page.locator('#verification h2').textContent()).toBe('Not verified');
    await page.close();
  });
});

interface BrowserGlobals {
  getComputedStyle(element: unknown): { backgroundColor: string };
}
