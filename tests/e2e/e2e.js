// Drives code-server (real VS Code 1.100) in Debian Chromium with playwright-core
// and checks what a user of the harn-state extension sees. Run by run.sh, which
// starts code-server and passes CS_URL, WS (the project copy) and SHOTS.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');
const fixture = require('./fixture');
const views = require('./views_checks');

const CS_URL = process.env.CS_URL;
const WS = process.env.WS;
const SHOTS = process.env.SHOTS || path.join(__dirname, 'screenshots');
const TMP = process.env.TMP_DIR || require('os').tmpdir();
const CHECK_TIMEOUT = 90_000;
// Which suite runs (see SUITES): `main` (trusted folder) or `untrusted` (Restricted Mode).
const MODE = process.env.E2E_MODE || 'main';
// Shadow modules in the folder (harn_ls/, pygls/, orjson.py, a python3) write here when they run.
const MARKERS = process.env.MARKERS || '';
const EXT_LOG_ROOT = process.env.EXT_LOG_ROOT || '';

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
  const snap = await rows(page, view).evaluateAll(els => els.map(el => ({ text: el.innerText, collapsed: el.getAttribute('aria-expanded') === 'false' })));
  for (let i = snap.length - 1; i >= 0; i--) {  // bottom-up: expanding a row does not move the rows above it
    if (!snap[i].collapsed || (filter && !filter(snap[i].text))) continue;
    await rows(page, view).nth(i).locator('.monaco-tl-twistie').click({ timeout: 3000 }).catch(() => {});
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
  // focus the editor; a widget over its corner (a lens, a hover, a toast) can take the click, and
  // then the hidden input area is focused directly
  await activeEditor(page).locator('.view-lines').click({ position: { x: 5, y: 5 }, timeout: 5_000 })
    .catch(() => activeEditor(page).locator('textarea.inputarea').first().focus());
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`:${line}:${col}`);
  await page.keyboard.press('Enter');
  await sleep(200);
}

// ---- the checks --------------------------------------------------------------

// ---- checks: one function per check, `title` is what the log prints -------------------

async function checkFourViewsRenderWithItems({ page, fx, probeTarget }) {
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
    await waitFor(async () => (await rowTexts(page, view)).length > 0, `rows in ${VIEW_TITLES[view]}`, 45_000);
    // Groups (e.g. "Pending proposals", skill layers) hold the fixture's items: open them as needed.
    const texts = await waitFor(async () => (await seen()) || (await expandRows(page, view), undefined),
      `a fixture item in ${VIEW_TITLES[view]}`, 30_000, 500)
      .catch(async e => { throw new Error(`${e.message}; rows: ${JSON.stringify(await rowTexts(page, view)).slice(0, 300)}`); });
    summary.push(`${view}: ${texts.length} rows`);
    await shot(page, `view-${view}`);
  }
  for (const view of Object.keys(VIEW_TITLES)) await expandPane(page, view);
  return summary.join(', ');
}
checkFourViewsRenderWithItems.title = 'four views render with items from the fixture';

async function checkFactCodeLensAndHover({ page, fx, probeTarget }) {
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
      const all = await page.locator('.monaco-editor .monaco-hover-content').allInnerTexts();
      return all.map(norm).find(t => claims.some(c => t.includes(c)));
    }, `a hover showing a fact claim on ${fact.file}:${fact.start}`, 10_000).catch(e => { if (attempt === 2) throw e; });
  }
  await shot(page, 'fact-hover');
  return `lens "${lens.trim()}", hover "${hoverText.slice(0, 80)}"`;
}
checkFactCodeLensAndHover.title = 'fact code lens and hover on a source file';

async function checkOpeningATranscriptShowsIts({ page, fx, probeTarget }) {
  if (!fx.transcripts.length) throw new Error('the fixture has no transcript');
  await focusView(page, 'runs');
  await waitFor(async () => (await rows(page, 'runs').count()) > 0, 'rows in Runs', 20_000);
  const ids = fx.transcripts.map(tr => String(tr.id || '')).filter(id => id.length >= 8);
  const isTranscriptRow = t => ids.some(id => t.includes(id.slice(0, 13)));
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
}
checkOpeningATranscriptShowsIts.title = 'opening a transcript shows its text';

async function checkStatusBarShowsCountsAnd({ page, fx, probeTarget }) {
  const item = page.locator('.statusbar-item', { hasText: /^\s*Harn\b/ }).first();
  const text = await waitFor(async () => {
    const t = (await item.innerText().catch(() => '')).trim();
    return /\d/.test(t) ? t : undefined;
  }, 'the Harn status bar item with counts', 20_000);
  await item.click();
  await waitFor(async () => /index\.md/.test(await activeTabLabel(page)), 'index.md to open', 15_000);
  await waitFor(async () => (await editorText(page)).trim().length > 20, 'index text', 10_000);
  return `"${text}"`;
}
checkStatusBarShowsCountsAnd.title = 'status bar shows counts and opens the index';

async function checkRecallMemoryOpensRankedResults({ page, fx, probeTarget }) {
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
}
checkRecallMemoryOpensRankedResults.title = 'recall memory opens ranked results';

async function checkAcceptingAProposalWritesSkill({ page, fx, probeTarget }) {
  const skillRoot = '.claude/skills';
  const candidates = fx.proposals.filter(p => !p.suppressed && (p.kind === 'skill' || !p.kind) && p.name
    && !fs.existsSync(path.join(WS, skillRoot, p.name, 'SKILL.md')));
  if (!candidates.length) throw new Error('the fixture has no pending skill proposal');
  await focusView(page, 'skills');
  await waitFor(async () => (await rows(page, 'skills').count()) > 0, 'rows in Skills & Proposals', 20_000);
  // One atomic snapshot of the rendered rows (rows re-render while the tree refreshes).
  const snapshot = () => rows(page, 'skills').evaluateAll(els => els.map(el => ({
    text: el.innerText, proposal: !!el.querySelector('.action-label[aria-label^="Accept Proposal"]'),
  })));
  const matches = (text, p) => [p.name, p.title, p.id].filter(Boolean).some(tok => norm(text).includes(norm(tok)));
  const findRow = async () => {
    const snap = await snapshot();
    for (let i = 0; i < snap.length; i++) {
      const p = snap[i].proposal && candidates.find(c => matches(snap[i].text, c));
      if (p) return { row: rows(page, 'skills').nth(i), p };
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
  // Gone from the pending proposals, while the other pending proposals are still listed.
  await waitFor(async () => {
    const snap = await snapshot();
    return !snap.some(r => r.proposal && matches(r.text, p)) && snap.some(r => r.proposal);
  }, `proposal ${p.id} to leave the pending proposals`, 15_000);
  return `${p.id} → ${path.relative(WS, skillFile)}`;
}
checkAcceptingAProposalWritesSkill.title = 'accepting a proposal writes SKILL.md and removes it from the view';

async function checkTypecheckProbeOnASelection({ page, fx, probeTarget }) {
  const target = probeTarget;
  await quickOpen(page, target.file);
  const squiggles = () => activeEditor(page).locator('.squiggly-error, .squiggly-warning, .squiggly-info, .squiggly-hint').count();
  await sleep(1000);
  const before = await squiggles();
  if (before) throw new Error(`${target.file} has ${before} diagnostics before the probe`);
  await gotoLine(page, target.start, 1);
  for (let i = target.start; i < target.end; i++) await page.keyboard.press('Shift+ArrowDown');
  await page.keyboard.press('Shift+End');
  await shot(page, 'probe-selection');
  await runCommand(page, 'Harn State: Run Typecheck Probe on Selection');
  await waitFor(async () => (await squiggles()) > 0, `diagnostic squiggles in ${target.file}`, 45_000);
  await page.keyboard.press('Control+Shift+M');
  const problems = await waitFor(async () => {
    const t = (await page.locator('.markers-panel .monaco-list-row').allInnerTexts()).map(x => x.replace(/\s+/g, ' ').trim());
    return t.find(x => /HARN-TYP-001/.test(x) && new RegExp(`Ln ${target.start}, Col`).test(x));
  }, `the HARN-TYP-001 type error on line ${target.start} in the Problems panel`, 15_000);
  return `"${problems}"`;
}
checkTypecheckProbeOnASelection.title = 'typecheck probe on a selection shows diagnostics';

async function checkAServerThatCannotStart({ page, fx, probeTarget }) {
  // Through the Settings UI, as a user would (code-server does not watch settings.json on disk).
  const setServerPath = async value => {
    const input = page.locator('.settings-editor [data-key="harnState.server.path"] input').first();
    if (!(await input.isVisible().catch(() => false))) {
      await runCommand(page, 'Preferences: Open Remote Settings');
      const search = page.locator('.settings-editor .settings-header .suggest-input-container textarea, .settings-editor .settings-header input').first();
      await search.waitFor({ timeout: 15_000 });
      await search.fill('@id:harnState.server.path');
      await input.waitFor({ timeout: 15_000 });
    }
    const before = await input.inputValue();
    await input.fill(value);
    await input.press('Tab');
    return before;
  };
  const item = page.locator('.statusbar-item', { hasText: /^\s*Harn\b/ }).first();
  const original = await setServerPath('/nonexistent/python3');  // '' when the bundled server runs
  let message;
  try {
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'harn_ls' }).first();
    await toast.waitFor({ timeout: 30_000 });
    message = (await toast.innerText()).replace(/\s+/g, ' ').trim();
    await shot(page, 'server-missing');
    if (!/pip install harn-ls/.test(message) || !/harnState\.server\.path/.test(message)) throw new Error(`the notification gives no fix: "${message}"`);
  } finally {
    await setServerPath(original);
  }
  const text = await waitFor(async () => {
    const t = (await item.innerText().catch(() => '')).trim();
    return /\d+ runs?/.test(t) ? t : undefined;
  }, 'the server to come back after the setting was restored', 30_000);
  await page.keyboard.press('Control+W');
  await focusView(page, 'runs');
  await waitFor(async () => (await rowTexts(page, 'runs')).some(t => fx.runs.some(r => r.tokens.some(tok => norm(t).includes(norm(tok))))),
    'runs in the view after the restart', 20_000);
  return `notification "${message.slice(0, 90)}…", then status "${text}"`;
}
checkAServerThatCannotStart.title = 'a server that cannot start explains the fix; fixing the setting restarts it';

async function checkRestartServerCommandBringsThe({ page, fx, probeTarget }) {
  await runCommand(page, 'Harn State: Restart Server');
  const item = page.locator('.statusbar-item', { hasText: /^\s*Harn\b/ }).first();
  await sleep(500);
  await waitFor(async () => /\d+ runs?/.test(await item.innerText().catch(() => '')), 'the status bar counts after the restart', 30_000);
  await focusView(page, 'skills');
  const texts = await waitFor(async () => { const t = await rowTexts(page, 'skills'); return t.length ? t : undefined; }, 'rows in Skills & Proposals', 20_000);
  return `${texts.length} skill rows`;
}
checkRestartServerCommandBringsThe.title = 'Restart Server command brings the views back';

async function checkWelcomeViewWhenTheFolder({ page, fx, probeTarget }) {
  const empty = path.join(TMP, 'no-state');
  fs.mkdirSync(empty, { recursive: true });
  fs.writeFileSync(path.join(empty, 'notes.txt'), 'no agent state here\n');
  const url = new URL(CS_URL);
  url.searchParams.set('folder', empty);
  await page.goto(url.toString(), { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 60_000 });
  await openHarnContainer(page);
  const welcome = pane(page, 'runs').locator('.welcome-view-content');
  await waitFor(async () => /no `?\.harn\/?`? directory/i.test(await welcome.innerText().catch(() => '')), 'the welcome text in Runs & Transcripts', 30_000);
  return `"${(await welcome.innerText()).split('\n')[0]}"`;
}
checkWelcomeViewWhenTheFolder.title = 'welcome view when the folder has no .harn';

/** The Harn State output channel's log file (code-server writes it under the user-data logs). */
function extensionLog() {
  const found = [];
  const walk = dir => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/Harn State/.test(e.name) && e.name.endsWith('.log')) found.push(p);
    }
  };
  if (EXT_LOG_ROOT && fs.existsSync(EXT_LOG_ROOT)) walk(EXT_LOG_ROOT);
  return found.map(f => fs.readFileSync(f, 'utf8')).join('\n');
}

async function checkServerIsTheBundledOne() {
  const line = await waitFor(() => extensionLog().split('\n').find(l => /Starting harn-ls: /.test(l)),
    'the "Starting harn-ls" line in the Harn State log', 30_000);
  if (!/ -I \S*\/bundled\/tool\/serve\.py serve /.test(line)) throw new Error(`not the bundled server, isolated: ${line}`);
  const running = await waitFor(() => extensionLog().split('\n').find(l => /harn-ls is running: harn-ls \d+\.\d+/.test(l)),
    'the server version in the Harn State log', 30_000);
  return `${line.replace(/^.*Starting harn-ls: /, '')}; ${running.replace(/^.*is running: /, '')}`;
}
checkServerIsTheBundledOne.title = 'the server is the bundled harn-ls, run isolated by a python3 without harn_ls';

async function checkNoCodeFromTheFolderRan() {
  if (!MARKERS) throw new Error('MARKERS is not set (run tests/e2e/run.sh)');
  const planted = fs.readdirSync(WS).filter(n => ['harn_ls', 'pygls', 'orjson.py'].includes(n));
  if (planted.length !== 3) throw new Error(`the shadow modules are not in the folder: ${planted}`);
  const ran = fs.existsSync(MARKERS) ? fs.readdirSync(MARKERS) : [];
  if (ran.length) throw new Error(`code from the folder ran: ${ran.join(', ')}`);
  return `shadow ${planted.join(', ')} present, no marker written`;
}
checkNoCodeFromTheFolderRan.title = 'no code from the folder ran (shadow harn_ls/, pygls/, orjson.py)';

async function checkRunsViewFills({ page, fx }) {
  await focusView(page, 'runs');
  const tokens = fx.runs.flatMap(r => r.tokens).filter(Boolean).map(norm);
  const texts = await waitFor(async () => {
    const t = (await rowTexts(page, 'runs')).map(norm);
    return t.some(x => tokens.some(tok => x.includes(tok))) ? t : undefined;
  }, 'a fixture run in Runs & Transcripts', 45_000);
  return `${texts.length} rows`;
}
checkRunsViewFills.title = 'the Runs & Transcripts view fills';

async function checkFolderInterpreterRefused() {
  const line = await waitFor(() => extensionLog().split('\n').find(l => /Not using python3 on PATH .*inside the workspace folder/.test(l)),
    'the log line refusing the python3 inside the untrusted folder', 30_000);
  return line.replace(/^.*Not using /, 'not using ').slice(0, 160);
}
checkFolderInterpreterRefused.title = 'in Restricted Mode a python3 inside the folder is not used';


// ---- issue 27: command: links from the folder's settings and data, in Restricted Mode ------------
// link_attacks.py planted them; each link, if VS Code made it live and it were clicked, would
// `touch $MARKERS/<name>` through a terminal.

const LINK_MARKERS = ['s', 'u', 'p', 'h'];  // link_attacks.py MARKERS
const markersWritten = () => (fs.existsSync(MARKERS) ? fs.readdirSync(MARKERS) : []).filter(n => LINK_MARKERS.includes(n));

/** Notifications (toasts, or the notification center once opened) whose text matches `re`: their
 * text and the links VS Code rendered in their message. */
async function toastsMatching(page, re) {
  const toasts = page.locator('.notifications-toasts .notification-list-item, .notifications-center .notification-list-item');
  const out = [];
  for (let i = 0; i < await toasts.count(); i++) {
    const t = toasts.nth(i);
    const text = (await t.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    if (!re.test(text)) continue;
    const links = await t.locator('.notification-list-item-message a').evaluateAll(as => as.map(a => ({
      text: a.textContent, href: a.getAttribute('href') || a.getAttribute('data-href') || a.title || '' })));
    out.push({ toast: t, text, links });
  }
  return out;
}

/**
 * The notification matching `re` shows `visible` as plain text and holds no link; every link it
 * might hold, and its text, are clicked anyway; after that no marker exists.
 */
async function assertInertToast(page, re, visible, what) {
  let centerOpened = false;
  const [hit] = await waitFor(async () => {
    const t = await toastsMatching(page, re);
    if (t.length) return t;
    if (!centerOpened) {  // a toast hides after a while; the notification center keeps it
      centerOpened = true;
      await runCommand(page, 'Notifications: Show Notifications').catch(() => {});
    }
    return undefined;
  }, `the notification about ${what}`, 30_000);
  await shot(page, `inert-${what.replace(/[^a-z0-9]+/gi, '-')}`);
  // as a user would: click every link the message holds, then its text
  const message = hit.toast.locator('.notification-list-item-message');
  for (const a of await message.locator('a').all()) await a.click({ timeout: 3000 }).catch(() => {});
  await message.click({ timeout: 3000 }).catch(() => {});
  await waitFor(() => markersWritten().length > 0, 'a marker', 4000).catch(() => {});  // a clicked link's terminal writes it in ~1 s
  const written = markersWritten();
  await shot(page, `inert-${what.replace(/[^a-z0-9]+/gi, '-')}-clicked`);
  if (hit.links.length || written.length) {
    throw new Error(`live link(s) in the notification "${hit.text.slice(0, 120)}": ${JSON.stringify(hit.links).slice(0, 240)}; ` +
      `marker(s) after clicking: ${written.join(', ') || 'none'}`);
  }
  if (!hit.text.includes(visible)) throw new Error(`the notification does not show ${JSON.stringify(visible)} as text: "${hit.text}"`);
  await page.keyboard.press('Escape').catch(() => {});
  return `"${hit.text.slice(0, 110)}…", no link, no marker`;
}

async function checkSkillRootLinkInert({ page }) {
  // The folder's .vscode/settings.json sets a link (marker s): restricted, never used.
  // The user's own settings set one too (marker u): the warning quotes it, inert.
  const detail = await assertInertToast(page, /skillRoot/, '[Open]\\(command:workbench.action.terminal.newWithProfile', 'the skillRoot warning');
  const all = (await toastsMatching(page, /markers\/s"/)).map(t => t.text);
  if (all.length) throw new Error(`the folder's restricted skillRoot reached a notification: ${all[0].slice(0, 160)}`);
  return detail;
}
checkSkillRootLinkInert.title = 'issue 27: a skillRoot link (folder setting ignored, user setting quoted) is inert';

async function checkHitlPromptLinkInert({ page }) {
  const py = process.env.E2E_PYTHON || 'python3';
  require('child_process').execFileSync(py, [path.join(__dirname, 'link_attacks.py'), 'hitl', WS, MARKERS], { encoding: 'utf8' });
  return assertInertToast(page, /waiting for you/, '[Go]\\(command:workbench.action.terminal.newWithProfile', 'a HITL prompt');
}
checkHitlPromptLinkInert.title = 'issue 27: a HITL prompt link arriving while open is inert';

async function checkProposalNameLinkInert({ page }) {
  await focusView(page, 'skills');
  const title = 'Fix the flaky build';
  const find = async () => {
    const texts = await rowTexts(page, 'skills');
    const i = texts.findIndex(t => t.includes(title));
    if (i >= 0) return rows(page, 'skills').nth(i);
    await expandRows(page, 'skills');
    return undefined;
  };
  const row = await waitFor(find, `the proposal "${title}" in Skills & Proposals`, 30_000, 500);
  await row.hover();
  await row.locator('.action-label[aria-label^="Accept Proposal"]').click();
  return assertInertToast(page, /HARN-PATTERN-002/, '[Fix it]\\(command:workbench.action.terminal.newWithProfile', 'the Accept refusal');
}
checkProposalNameLinkInert.title = 'issue 27: Accept on a proposal named by a link: the refusal is inert';

// Which checks run: `main` in the trusted run, `untrusted` in the Restricted Mode run (run.sh sets E2E_MODE).
/** Pending HITL approvals in the project's .harn/events.sqlite, read with Python's stdlib sqlite3
 * (independently of harn-ls): *_requested events with no terminal event for their request id. */
function pendingApprovals() {
  const script = [
    'import json, sqlite3, sys',
    'c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro&immutable=1", uri=True)',
    'rows = c.execute("SELECT kind, payload, headers FROM events WHERE topic = \'hitl.approvals\' ORDER BY event_id").fetchall()',
    'req, done = {}, set()',
    'for kind, payload, headers in rows:',
    '    p = json.loads(payload); rid = json.loads(headers).get("request_id") or p.get("request_id")',
    '    if kind == "hitl.approval_requested": req[rid] = p["payload"].get("action")',
    '    elif kind in ("hitl.approval_approved", "hitl.approval_denied", "hitl.timeout") or (kind == "hitl.response_received" and p.get("approved") is False): done.add(rid)',
    'print(json.dumps([{"id": k, "action": v} for k, v in req.items() if k not in done]))',
  ].join('\n');
  const db = path.join(WS, '.harn', 'events.sqlite');
  if (!fs.existsSync(db)) return [];
  const out = require('child_process').execFileSync(process.env.E2E_PYTHON || 'python3', ['-c', script, db], { encoding: 'utf8' });
  return JSON.parse(out);
}

async function checkPendingApproval({ page }) {
  const pending = pendingApprovals();
  if (!pending.length) throw new Error('the fixture has no pending approval in .harn/events.sqlite');
  const item = page.locator('.statusbar-item', { hasText: /^\s*Harn\b/ }).first();
  const bar = await waitFor(async () => {
    const t = (await item.innerText().catch(() => '')).replace(/\s+/g, ' ').trim();
    return new RegExp(`\\b${pending.length} waiting\\b`).test(t) ? t : undefined;
  }, `"${pending.length} waiting" in the Harn status bar item`, 20_000);
  await focusView(page, 'runs');
  const groupText = await waitFor(async () => (await rowTexts(page, 'runs')).find(t => /(^|\s)Waiting for you/.test(t)),
    'a "Waiting for you" row in Runs & Transcripts', 20_000)
    .catch(async e => { throw new Error(`${e.message}; rows: ${JSON.stringify(await rowTexts(page, 'runs')).slice(0, 400)}`); });
  if (!groupText.includes(String(pending.length))) throw new Error(`the group row says "${groupText}", expected ${pending.length} pending`);
  const wanted = pending.map(p => norm(p.action)).filter(Boolean);
  const row = await waitFor(async () => {
    const texts = (await rowTexts(page, 'runs')).map(norm);
    const hit = texts.find(t => wanted.some(w => t.includes(w)));
    if (hit) return hit;
    await expandRows(page, 'runs', t => /(^|\s)Waiting for you/.test(t.trim()));
    return undefined;
  }, `the pending approval (${wanted[0]}) under Waiting for you`, 20_000, 500);
  await shot(page, 'waiting-for-you');
  return `status "${bar}", row "${row.slice(0, 80)}"`;
}
checkPendingApproval.title = 'a pending approval shows under Waiting for you and in the status bar';

/** The rows of one request in the project's log, read with Python's stdlib sqlite3 (not harn-ls). */
function requestRows(rid) {
  const script = [
    'import json, sqlite3, sys',
    'c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)',
    'rid = sys.argv[2]',
    'out = []',
    'for topic, eid, kind, payload, headers in c.execute("SELECT topic, event_id, kind, payload, headers FROM events ORDER BY topic, event_id"):',
    '    p = json.loads(payload); h = json.loads(headers)',
    '    if h.get("request_id") == rid or h.get("waitpoint_id") == rid or (isinstance(p, dict) and (p.get("request_id") == rid or p.get("waitpoint_id") == rid)):',
    '        out.append({"topic": topic, "id": eid, "kind": kind, "payload": p, "chained": "harn.provenance.record_hash" in h})',
    'print(json.dumps(out))',
  ].join('\n');
  const db = path.join(WS, '.harn', 'events.sqlite');
  return JSON.parse(require('child_process').execFileSync(process.env.E2E_PYTHON || 'python3', ['-c', script, db, rid], { encoding: 'utf8' }));
}

async function checkApproveFromWaitingForYou({ page }) {
  const rid = 'hitl_approval_e2e-approve-1';
  const label = 'rotate e2e credentials';
  await focusView(page, 'runs');
  const rowOf = async () => {
    const texts = (await rowTexts(page, 'runs')).map(norm);
    const i = texts.findIndex(t => t.includes(label));
    return i >= 0 ? rows(page, 'runs').nth(i) : undefined;
  };
  const row = await waitFor(async () => {
    const r = await rowOf();
    if (r) return r;
    await expandRows(page, 'runs', t => /(^|\s)Waiting for you/.test(t.trim()));
    return undefined;
  }, `"${label}" under Waiting for you`, 20_000, 500);
  await row.hover();
  await row.locator('.action-label[aria-label^="Approve"]').click();
  // the optional reason: type one, then Enter
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill('e2e: approved from the tree');
  await page.keyboard.press('Enter');
  await waitFor(async () => !(await rowOf()), `"${label}" to leave Waiting for you`, 20_000, 300);
  await shot(page, 'approved-from-waiting-for-you');
  const got = requestRows(rid);
  const kinds = got.map(r => `${r.topic}#${r.kind}`);
  const want = ['hitl.approvals#hitl.approval_requested', 'hitl.approvals#hitl.response_received',
    'hitl.approvals#hitl.approval_approved', 'waitpoint.resumes#waitpoint.resume',
    `waitpoint.state.${rid}#waitpoint.state`, `waitpoint.state.${rid}#waitpoint.state`];
  if (JSON.stringify(kinds) !== JSON.stringify(want)) throw new Error(`rows: ${JSON.stringify(kinds)}`);
  const resp = got[1].payload;
  if (resp.approved !== true || resp.reviewer !== 'alice' || resp.reason !== 'e2e: approved from the tree') {
    throw new Error(`response payload: ${JSON.stringify(resp)}`);
  }
  if (got[5].payload.status !== 'completed' || !got.every(r => r.chained)) throw new Error('waitpoint not completed or rows without provenance');
  return `${got.length} rows for ${rid}; response by ${resp.reviewer}`;
}
checkApproveFromWaitingForYou.title = 'approving from the Waiting for you item writes Harn\'s rows and the item leaves';

const SUITES = {
  main: [
    checkFourViewsRenderWithItems,
    checkServerIsTheBundledOne,
    checkFactCodeLensAndHover,
    checkOpeningATranscriptShowsIts,
    checkStatusBarShowsCountsAnd,
    checkPendingApproval,
    checkApproveFromWaitingForYou,
    checkRecallMemoryOpensRankedResults,
    checkAcceptingAProposalWritesSkill,
    checkTypecheckProbeOnASelection,
    checkAServerThatCannotStart,
    checkRestartServerCommandBringsThe,
    checkNoCodeFromTheFolderRan,
    checkWelcomeViewWhenTheFolder,  // last: it navigates to another folder
  ],
  untrusted: [
    checkRunsViewFills,
    checkServerIsTheBundledOne,
    checkFolderInterpreterRefused,
    checkSkillRootLinkInert,
    checkHitlPromptLinkInert,
    checkProposalNameLinkInert,
    checkNoCodeFromTheFolderRan,
  ],
};

async function main() {
  if (!CS_URL || !WS) throw new Error('CS_URL and WS must be set (run tests/e2e/run.sh)');
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const f of fs.readdirSync(SHOTS)) if (f.endsWith('.png')) fs.rmSync(path.join(SHOTS, f));
  const fx = fixture.load(WS);
  const probeTarget = writeProbeTarget();
  log(`fixture: ${fx.runs.length} runs, ${fx.transcripts.length} transcripts, ${fx.pipelines.length} checkpoint files, ` +
      `${fx.namespaces.length} namespaces, ${fx.facts.length} file facts, ${fx.proposals.length} proposals, ${fx.skills.length} skills`);

  views.presetSourceDocuments(WS);
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

    const env = { page, fx, probeTarget };
    // The rendered-views checks (issue 17) run once, in the trusted suite, before its last check
    // (the welcome view, which navigates to another folder).
    const suite = SUITES[MODE];
    const tail = MODE === 'main' ? suite.slice(-1) : [];
    for (const fn of suite.slice(0, suite.length - tail.length)) await check(page, fn.title, () => fn(env));
    if (MODE === 'main') {
      await views.viewChecks({ page, check, shot, waitFor, sleep, log, WS, focusView, rows, rowTexts, expandRows, runCommand });
    }
    for (const fn of tail) await check(page, fn.title, () => fn(env));
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

/**
 * The probe target: a small .harn file written into the project copy, with one
 * line the harn test double reports as a type error (tests/harn_test_double.py:
 * `let <name>: int = "<text>"`). The selection covers that line only.
 */
const PROBE_FILE = 'pipelines/e2e_probe.harn';
function writeProbeTarget() {
  const text = [
    '// Written by the VS Code e2e: a snippet to typecheck before trusting it.',
    'pipeline e2e_probe(task) {',
    '  let total: int = "forty-two"',
    '  log(total)',
    '}',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(WS, PROBE_FILE), text);
  return { file: PROBE_FILE, start: 3, end: 3 };
}

main().catch(e => {
  console.error('e2e: driver error:', e && e.stack ? e.stack.split('\n').slice(0, 6).join('\n') : e);
  if (!summarized) {
    const passed = results.filter(r => r.ok).length;
    console.log(`e2e: ${passed} passed, ${Math.max(1, results.length - passed)} failed`);
  }
  process.exit(1);
});
