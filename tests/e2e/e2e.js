// Drives code-server (real VS Code 1.100) in Debian Chromium with playwright-core
// and checks what a user of the harn-state extension sees. Run by run.sh, which
// starts code-server and passes CS_URL, WS (the project copy) and SHOTS.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');
const fixture = require('./fixture');

const CS_URL = process.env.CS_URL;
const WS = process.env.WS;
const SHOTS = process.env.SHOTS || path.join(__dirname, 'screenshots');
const TMP = process.env.TMP_DIR || require('os').tmpdir();
const CHECK_TIMEOUT = 90_000;

const results = [];
let summarized = false;
let shotNo = 0;

function log(...a) { console.log('e2e:', ...a); }
const norm = s => String(s || '').replace(/[*_`#>]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function waitFor(fn, what, timeout = 30_000, every = 250) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last instanceof Error ? ` (${last.message.split('\n')[0]})` : ''}`);
    await sleep(every);
  }
}

async function shot(page, name) {
  shotNo += 1;
  const file = path.join(SHOTS, `${String(shotNo).padStart(2, '0')}-${name}.png`);
  try { await page.screenshot({ path: file }); } catch (e) { log(`screenshot ${file} failed: ${e.message}`); }
  return file;
}

async function check(page, name, fn) {
  const t = Date.now();
  let timer;
  try {
    const detail = await Promise.race([
      fn(),
      new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`check took over ${CHECK_TIMEOUT / 1000}s`)), CHECK_TIMEOUT); }),
    ]);
    results.push({ name, ok: true });
    log(`PASS ${name} (${Date.now() - t} ms)${detail ? ` — ${detail}` : ''}`);
  } catch (e) {
    results.push({ name, ok: false, error: e.message });
    log(`FAIL ${name} (${Date.now() - t} ms): ${e.message.split('\n').slice(0, 4).join(' | ')}`);
  } finally {
    clearTimeout(timer);
    await shot(page, name.replace(/[^a-z0-9]+/gi, '-').toLowerCase());
    await page.keyboard.press('Escape').catch(() => {});
  }
}

// ---- workbench helpers -------------------------------------------------------

const VIEW_TITLES = { runs: 'Runs & Transcripts', checkpoints: 'Checkpoints', memory: 'Memory & Facts', skills: 'Skills & Proposals' };

async function openHarnContainer(page) {
  const icon = page.locator('.activitybar .action-label[aria-label="Harn"], .activitybar .action-label[aria-label^="Harn ("]').first();
  await icon.waitFor({ timeout: 60_000 });
  const pane = page.locator('.pane-header', { hasText: VIEW_TITLES.runs });
  if (!(await pane.isVisible().catch(() => false))) await icon.click();
  await pane.first().waitFor({ timeout: 30_000 });
}

function pane(page, view) {
  return page.locator('.split-view-view .pane').filter({ has: page.locator('.pane-header', { hasText: VIEW_TITLES[view] }) }).first();
}

async function expandPane(page, view) {
  const header = pane(page, view).locator('.pane-header').first();
  if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
}

/** Maximize one view (collapse the other three) so its rows are all rendered. */
async function focusView(page, view) {
  await openHarnContainer(page);
  for (const v of Object.keys(VIEW_TITLES)) {
    const header = pane(page, v).locator('.pane-header').first();
    const expanded = (await header.getAttribute('aria-expanded')) !== 'false';
    if ((v === view) !== expanded) await header.click();
  }
}

function rows(page, view) {
  return pane(page, view).locator('.monaco-list-row');
}

async function rowTexts(page, view) {
  return (await rows(page, view).allInnerTexts()).map(t => t.replace(/\s+/g, ' ').trim());
}

/** Expand every collapsed row currently shown in a view (one level). */
async function expandRows(page, view, filter) {
  const n = await rows(page, view).count();
  for (let i = 0; i < n; i++) {
    const row = rows(page, view).nth(i);
    if ((await row.getAttribute('aria-expanded')) !== 'false') continue;
    if (filter && !filter(await row.innerText())) continue;
    await row.locator('.monaco-tl-twistie').click();
    await sleep(300);
  }
}

function activeEditor(page) {
  return page.locator('.part.editor .editor-group-container.active .monaco-editor').first();
}

async function activeTabLabel(page) {
  return (await page.locator('.part.editor .editor-group-container.active .tab.active').first().innerText().catch(() => '')).trim();
}

async function editorText(page) {
  return (await activeEditor(page).locator('.view-lines').innerText().catch(() => '')).replace(/\u00a0/g, ' ');
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`>${title}`);
  const item = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
  await item.waitFor({ timeout: 10_000 });
  await page.keyboard.press('Enter');
}

async function quickOpen(page, relPath) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(relPath);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: path.basename(relPath) }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await waitFor(async () => (await activeTabLabel(page)).includes(path.basename(relPath)), `editor tab ${relPath}`, 15_000);
  await activeEditor(page).locator('.view-lines').waitFor({ timeout: 10_000 });
}

async function gotoLine(page, line, col = 1) {
  await activeEditor(page).locator('.view-lines').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`${line}:${col}`);
  await page.keyboard.press('Enter');
  await sleep(200);
}

// ---- the checks --------------------------------------------------------------

async function main() {
  if (!CS_URL || !WS) throw new Error('CS_URL and WS must be set (run tests/e2e/run.sh)');
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const f of fs.readdirSync(SHOTS)) if (f.endsWith('.png')) fs.rmSync(path.join(SHOTS, f));
  const fx = fixture.load(WS);
  log(`fixture: ${fx.runs.length} runs, ${fx.transcripts.length} transcripts, ${fx.pipelines.length} checkpoint files, ` +
      `${fx.namespaces.length} namespaces, ${fx.facts.length} file facts, ${fx.proposals.length} proposals, ${fx.skills.length} skills`);

  const userDataDir = fs.mkdtempSync(path.join(TMP, 'chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  const consoleErrors = [];
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text().slice(0, 300)); });
  try {
    await page.goto(CS_URL, { waitUntil: 'domcontentloaded', timeout: 60_000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
    await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60_000 });

    await check(page, 'four views render with items from the fixture', async () => {
      await openHarnContainer(page);
      const expect = {
        runs: fx.runs.flatMap(r => r.tokens),
        checkpoints: fx.pipelines.flatMap(p => [p.name, ...p.keys]),
        memory: fx.namespaces.flatMap(n => [n.name, n.name.split('/').pop(), n.name.split('/')[0]]),
        skills: [...fx.proposals.flatMap(p => [p.name, p.title, p.id]), ...fx.skills.map(s => s.name)],
      };
      const summary = [];
      for (const view of Object.keys(VIEW_TITLES)) {
        await focusView(page, view);
        const tokens = expect[view].filter(Boolean).map(norm);
        if (!tokens.length) throw new Error(`the fixture has nothing for the ${view} view`);
        const seen = async () => {
          const texts = (await rowTexts(page, view)).map(norm);
          return texts.length && texts.some(t => tokens.some(tok => t.includes(tok))) ? texts : undefined;
        };
        let texts = await waitFor(async () => (await rowTexts(page, view)).length > 0 && (await rowTexts(page, view)), `rows in ${VIEW_TITLES[view]}`, 45_000);
        if (!(await seen())) { await expandRows(page, view); await sleep(500); }
        texts = await waitFor(seen, `a fixture item in ${VIEW_TITLES[view]} (rows: ${JSON.stringify(texts).slice(0, 300)})`, 15_000);
        summary.push(`${view}: ${texts.length} rows`);
        await shot(page, `view-${view}`);
      }
      for (const view of Object.keys(VIEW_TITLES)) await expandPane(page, view);
      return summary.join(', ');
    });

    await check(page, 'fact code lens and hover on a source file', async () => {
      if (!fx.facts.length) throw new Error('the fixture has no fact with file_range evidence on an existing file');
      const fact = [...fx.facts].sort((a, b) => (b.confidence || 0) - (a.confidence || 0))[0];
      await quickOpen(page, fact.file);
      const lens = await waitFor(async () => {
        const texts = await activeEditor(page).locator('.codelens-decoration').allInnerTexts();
        return texts.find(t => /fact|claim|observation|hypothesis|decision|constraint|confidence/i.test(t));
      }, `a fact code lens in ${fact.file}`, 30_000);
      const claims = fx.facts.filter(f => f.file === fact.file).map(f => norm(f.claim).slice(0, 24));
      let hoverText;
      for (let attempt = 0; attempt < 3 && !hoverText; attempt++) {
        await gotoLine(page, fact.start, 1);
        await page.keyboard.press('Control+K');
        await page.keyboard.press('Control+I');
        hoverText = await waitFor(async () => {
          const all = await activeEditor(page).locator('.monaco-hover-content').allInnerTexts();
          return all.map(norm).find(t => claims.some(c => t.includes(c)));
        }, `a hover showing a fact claim on ${fact.file}:${fact.start}`, 10_000).catch(e => { if (attempt === 2) throw e; });
      }
      await shot(page, 'fact-hover');
      return `lens "${lens.trim()}", hover "${hoverText.slice(0, 80)}"`;
    });

    await check(page, 'opening a transcript shows its text', async () => {
      if (!fx.transcripts.length) throw new Error('the fixture has no transcript');
      await focusView(page, 'runs');
      await waitFor(async () => (await rows(page, 'runs').count()) > 0, 'rows in Runs', 20_000);
      const isTranscriptRow = t => /transcript/i.test(t) || fx.transcripts.some(tr => tr.id && t.includes(String(tr.id).slice(0, 8)));
      let row;
      for (let depth = 0; depth < 3 && !row; depth++) {
        const texts = await rowTexts(page, 'runs');
        const i = texts.findIndex(isTranscriptRow);
        if (i >= 0) { row = rows(page, 'runs').nth(i); break; }
        await expandRows(page, 'runs');
      }
      if (!row) throw new Error(`no transcript row in Runs & Transcripts (rows: ${JSON.stringify(await rowTexts(page, 'runs')).slice(0, 300)})`);
      const label = (await row.innerText()).replace(/\s+/g, ' ').trim();
      await row.locator('.label-name, .monaco-icon-label').first().click();
      await waitFor(async () => /\.md/.test(await activeTabLabel(page)), 'an editor tab for the transcript', 15_000);
      const wanted = fx.transcripts.flatMap(t => [t.summary, ...t.texts]).filter(Boolean).map(s => norm(s).slice(0, 30));
      const text = await waitFor(async () => {
        const t = norm(await editorText(page));
        return wanted.some(w => t.includes(w)) ? t : undefined;
      }, `transcript text in the editor (tab "${await activeTabLabel(page)}")`, 15_000);
      const lang = await page.locator('.statusbar-item[id="status.editor.mode"]').innerText().catch(() => '?');
      if (!/markdown/i.test(lang)) throw new Error(`transcript document opened as "${lang}", not Markdown`);
      return `row "${label}", tab "${await activeTabLabel(page)}", ${text.length} chars shown`;
    });

    await check(page, 'status bar shows counts and opens the index', async () => {
      const item = page.locator('.statusbar-item', { hasText: /^\s*Harn\b/ }).first();
      const text = await waitFor(async () => {
        const t = (await item.innerText().catch(() => '')).trim();
        return /\d/.test(t) ? t : undefined;
      }, 'the Harn status bar item with counts', 20_000);
      await item.click();
      await waitFor(async () => /index\.md/.test(await activeTabLabel(page)), 'index.md to open', 15_000);
      await waitFor(async () => (await editorText(page)).trim().length > 20, 'index text', 10_000);
      return `"${text}"`;
    });

    await check(page, 'recall memory opens ranked results', async () => {
      const words = fx.facts.map(f => f.claim).concat(fx.proposals.map(p => p.title)).join(' ')
        .toLowerCase().match(/[a-z]{5,}/g) || [];
      const query = words[0] || 'test';
      await runCommand(page, 'Harn State: Recall Memory');
      const input = page.locator('.quick-input-widget input');
      await waitFor(async () => (await input.getAttribute('placeholder') || '').includes('e.g.'), 'the recall input box', 10_000);
      await input.fill(query);
      await page.keyboard.press('Enter');
      await waitFor(async () => /recall\.md/.test(await activeTabLabel(page)), 'recall.md to open', 20_000);
      const text = await waitFor(async () => { const t = await editorText(page); return norm(t).includes(query) ? t : undefined; },
        `the query "${query}" in the recall document`, 15_000);
      return `query "${query}", ${text.split('\n').length} lines shown`;
    });

    await check(page, 'accepting a proposal writes SKILL.md and removes it from the view', async () => {
      const skillRoot = '.claude/skills';
      const candidates = fx.proposals.filter(p => !p.suppressed && (p.kind === 'skill' || !p.kind) && p.name
        && !fs.existsSync(path.join(WS, skillRoot, p.name, 'SKILL.md')));
      if (!candidates.length) throw new Error('the fixture has no pending skill proposal');
      await focusView(page, 'skills');
      await waitFor(async () => (await rows(page, 'skills').count()) > 0, 'rows in Skills & Proposals', 20_000);
      const isProposal = async row => (await row.locator('.action-label[aria-label^="Accept Proposal"]').count()) > 0;
      const findRow = async () => {
        const n = await rows(page, 'skills').count();
        for (let i = 0; i < n; i++) {
          const row = rows(page, 'skills').nth(i);
          const t = norm(await row.innerText());
          const p = candidates.find(c => [c.name, c.title, c.id].filter(Boolean).some(tok => t.includes(norm(tok))));
          if (p && await isProposal(row)) return { row, p };
        }
        return undefined;
      };
      let found = await findRow();
      for (let depth = 0; depth < 2 && !found; depth++) { await expandRows(page, 'skills'); found = await findRow(); }
      if (!found) throw new Error(`no pending-proposal row with an Accept button (rows: ${JSON.stringify(await rowTexts(page, 'skills')).slice(0, 300)})`);
      const { row, p } = found;
      await row.hover();
      await shot(page, 'proposal-before-accept');
      await row.locator('.action-label[aria-label^="Accept Proposal"]').click();
      const skillFile = path.join(WS, skillRoot, p.name, 'SKILL.md');
      await waitFor(() => fs.existsSync(skillFile), `${path.relative(WS, skillFile)} on disk`, 20_000);
      const head = fs.readFileSync(skillFile, 'utf8');
      if (!head.startsWith(`---\nname: ${p.name}\n`)) throw new Error(`SKILL.md does not start with the frontmatter name: ${JSON.stringify(head.slice(0, 80))}`);
      await waitFor(async () => {
        const n = await rows(page, 'skills').count();
        for (let i = 0; i < n; i++) {
          const r = rows(page, 'skills').nth(i);
          const t = norm(await r.innerText());
          if ([p.name, p.title].filter(Boolean).some(tok => t.includes(norm(tok))) && await isProposal(r)) return false;
        }
        return true;
      }, `proposal ${p.id} to leave the pending proposals`, 15_000);
      return `${p.id} → ${path.relative(WS, skillFile)}`;
    });

    await check(page, 'typecheck probe on a selection shows diagnostics', async () => {
      const target = probeTarget(fx);
      await quickOpen(page, target.file);
      await gotoLine(page, target.start, 1);
      for (let i = target.start; i < target.end; i++) await page.keyboard.press('Shift+ArrowDown');
      await page.keyboard.press('Shift+End');
      await runCommand(page, 'Harn State: Run Typecheck Probe on Selection');
      await waitFor(async () => (await activeEditor(page).locator('.squiggly-error, .squiggly-warning, .squiggly-info, .squiggly-hint').count()) > 0,
        `diagnostic squiggles in ${target.file}`, 45_000);
      await page.keyboard.press('Control+Shift+M');
      const problems = await waitFor(async () => {
        const t = await page.locator('.markers-panel .monaco-list-row').allInnerTexts();
        return t.length ? t : undefined;
      }, 'rows in the Problems panel', 15_000);
      return `${problems.length} problem rows, first: "${problems[0].replace(/\s+/g, ' ').slice(0, 100)}"`;
    });
  } finally {
    const passed = results.filter(r => r.ok).length;
    const failed = results.length - passed;
    if (failed && consoleErrors.length) {
      log(`browser console errors (${consoleErrors.length}, first 8):`);
      for (const e of consoleErrors.slice(0, 8)) log(`  ${e}`);
    }
    log(`screenshots in ${SHOTS}`);
    await ctx.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
    console.log(`e2e: ${passed} passed, ${failed} failed`);
    summarized = true;
    process.exitCode = failed || !results.length ? 1 : 0;
  }
}

/** Where to run the probe: a .harn source if the project has one, else a fact's file. */
function probeTarget(fx) {
  const harnFiles = [];
  const visit = (dir, depth) => {
    let ents = [];
    try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory() && depth < 4) visit(p, depth + 1);
      else if (e.isFile() && e.name.endsWith('.harn')) harnFiles.push(path.relative(WS, p));
    }
  };
  visit(WS, 0);
  if (harnFiles.length) {
    harnFiles.sort();
    const lines = fs.readFileSync(path.join(WS, harnFiles[0]), 'utf8').split('\n').length;
    return { file: harnFiles[0], start: 1, end: Math.max(1, Math.min(lines - 1, 4)) };
  }
  if (fx.facts.length) return { file: fx.facts[0].file, start: fx.facts[0].start, end: fx.facts[0].end };
  throw new Error('no source file to probe');
}

main().catch(e => {
  console.error('e2e: driver error:', e && e.stack ? e.stack.split('\n').slice(0, 6).join('\n') : e);
  if (!summarized) {
    const passed = results.filter(r => r.ok).length;
    console.log(`e2e: ${passed} passed, ${Math.max(1, results.length - passed)} failed`);
  }
  process.exit(1);
});
