// e2e checks for the rendered views (issue 17): a run's timeline, a transcript as a
// conversation, a checkpoint history diff and a run comparison, each with a screenshot.
// Called from e2e.js with its helpers; the other checks read documents as Markdown
// source, so these switch harnState.documents.openAs to "preview" first and back after.
'use strict';
const fs = require('fs');
const path = require('path');

/** Workspace settings before the page loads: the source-text checks see Markdown source. */
function presetSourceDocuments(ws) {
  const file = path.join(ws, '.vscode', 'settings.json');
  let settings = {};
  try { settings = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { /* none yet */ }
  settings['harnState.documents.openAs'] = 'source';
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(settings, null, 2));
}

/**
 * The rendered document's frame. Webviews live in an overlay layer of the workbench (not
 * inside the editor part), two iframes deep; our page marks its <body> with data-source.
 */
async function previewFrame(page, uriPart, waitFor) {
  return waitFor(async () => {
    for (const f of page.frames()) {
      const src = await f.evaluate(() => (document.body && document.body.dataset && document.body.dataset.source) || '').catch(() => '');
      if (src && src.includes(uriPart)) return f;
    }
    return undefined;
  }, `the rendered view of ${uriPart}`, 30_000, 500);
}

async function setOpenAs(h, value) {
  const { page, runCommand } = h;
  await runCommand(page, 'Preferences: Open Workspace Settings');
  const search = page.locator('.settings-editor .settings-header .suggest-input-container textarea, .settings-editor .settings-header input').first();
  await search.waitFor({ timeout: 15_000 });
  await search.fill('@id:harnState.documents.openAs');
  const select = page.locator('.settings-editor [data-key="harnState.documents.openAs"] select').first();
  await select.waitFor({ timeout: 15_000 });
  await select.selectOption(value);
  await h.waitFor(async () => (await select.inputValue()) === value, `the setting to read ${value}`, 5_000);
  await h.sleep(1000);
  await page.keyboard.press('Control+W');  // close the settings editor
  if (value !== 'preview') { return; }
  // The change reaches the extension host asynchronously: open the index until it comes up rendered.
  const end = Date.now() + 30_000;
  for (;;) {
    await runCommand(page, 'Harn State: Open Index');
    const frame = await previewFrame(page, '/index.md', (fn, what) => h.waitFor(fn, what, 3_000, 300)).catch(() => undefined);
    await page.keyboard.press('Control+W');
    if (frame) { return; }
    if (Date.now() > end) { throw new Error('harnState.documents.openAs = preview did not take effect'); }
    await h.sleep(1500);
  }
}

function runRecords(ws) {
  const dir = path.join(ws, '.harn-runs');
  const out = [];
  for (const n of fs.readdirSync(dir).filter(n => n.endsWith('.json')).sort()) {
    try {
      const rec = JSON.parse(fs.readFileSync(path.join(dir, n), 'utf8'));
      out.push({ rec, llm: fs.existsSync(path.join(dir, n.replace(/\.json$/, '-llm'), 'llm_transcript.jsonl')) });
    } catch { /* a bad record: not a candidate */ }
  }
  return out;
}

async function clickRow(h, view, match, what) {
  const { page, rows, rowTexts, expandRows, waitFor, focusView } = h;
  await focusView(page, view);
  await waitFor(async () => (await rows(page, view).count()) > 0, `rows in ${view}`, 20_000);
  let i = -1;
  for (let depth = 0; depth < 4 && i < 0; depth++) {
    i = (await rowTexts(page, view)).findIndex(match);
    if (i < 0) await expandRows(page, view);
  }
  if (i < 0) throw new Error(`no ${what} row (rows: ${JSON.stringify(await rowTexts(page, view)).slice(0, 300)})`);
  const row = rows(page, view).nth(i);
  await row.locator('.label-name, .monaco-icon-label').first().click();
  return row;
}

async function viewChecks(h) {
  const { page, check, shot, waitFor, WS } = h;
  const runs = runRecords(WS);
  const withLlm = runs.find(r => r.llm && Array.isArray(r.rec.stages) && r.rec.stages.length) || runs[0];
  try {
    await checks(h, runs, withLlm);
  } finally {
    await setOpenAs(h, 'source').catch(e => h.log(`restoring harnState.documents.openAs failed: ${e.message}`));
  }
}

async function checks(h, runs, withLlm) {
  const { page, check, shot, waitFor, WS } = h;

  await check(page, 'documents open rendered: a run starts with its timeline', async () => {
    await setOpenAs(h, 'preview');
    const rec = withLlm.rec;
    await clickRow(h, 'runs', t => t.includes(rec.workflow_name || rec.id), `run ${rec.id}`);
    const frame = await previewFrame(page, `/runs/${rec.id}.md`, waitFor);
    const bars = frame.locator('svg g.bar');
    const n = await waitFor(async () => { const c = await bars.count(); return c >= rec.stages.length ? c : undefined; },
      `timeline bars for the ${rec.stages.length} stages of ${rec.id}`, 30_000);
    const stageBars = await frame.locator('svg g.bar.stage').count();
    if (stageBars !== rec.stages.length) throw new Error(`${stageBars} stage bars for ${rec.stages.length} stages`);
    const heading = await frame.locator('h2', { hasText: 'Timeline' }).first().innerText();
    await shot(page, 'run-timeline');
    return `${n} bars (${stageBars} stages) under "${heading}"`;
  });

  await check(page, 'a transcript reads as a conversation with tool calls folded', async () => {
    const tr = withLlm.rec.transcript || (withLlm.rec.stages || []).map(s => s && s.transcript).find(Boolean);
    if (!tr || !tr.id) throw new Error('the run has no transcript');
    await clickRow(h, 'runs', t => t.includes(String(tr.id).slice(0, 13)), `transcript ${tr.id}`);
    const frame = await previewFrame(page, `/transcripts/${tr.id}.md`, waitFor);
    const call = frame.locator('details', { has: frame.locator('summary', { hasText: 'Tool call' }) }).first();
    await call.waitFor({ timeout: 30_000 });
    if (await call.getAttribute('open') !== null) throw new Error('the tool call is not folded');
    const roles = await frame.locator('h4').allInnerTexts();
    if (!roles.some(r => /User/.test(r)) || !roles.some(r => /Assistant/.test(r))) throw new Error(`turn headings: ${roles.join(' | ')}`);
    await shot(page, 'transcript-folded');
    await call.locator('summary').click();
    await waitFor(async () => (await call.getAttribute('open')) !== null, 'the tool call to unfold', 5_000);
    const args = (await call.locator('pre').innerText()).replace(/\s+/g, ' ');
    await shot(page, 'transcript-tool-call-open');
    return `${roles.length} turns; tool call arguments ${args.slice(0, 60)}`;
  });

  await check(page, 'checkpoint history: Compare with Previous opens a diff', async () => {
    const dir = path.join(WS, '.harn', 'checkpoints');
    const name = fs.readdirSync(dir).filter(n => n.endsWith('.json')).sort()[0];
    const pipeline = name.replace(/\.json$/, '');
    const file = path.join(dir, name);
    const data = JSON.parse(fs.readFileSync(file, 'utf8'));
    data.e2e_history_stage = { rows: 2, note: 'written by the e2e to make a second version' };
    const sorted = Object.fromEntries(Object.keys(data).sort().map(k => [k, data[k]]));
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(sorted, null, 2));
    fs.renameSync(`${file}.tmp`, file);  // as Harn writes: whole file, then rename
    const { focusView, rows, rowTexts, expandRows } = h;
    await focusView(page, 'checkpoints');
    const versionRow = await waitFor(async () => {
      const texts = await rowTexts(page, 'checkpoints');
      const i = texts.findIndex(t => /^version \d+/.test(t) && !/version 1\b/.test(t));
      if (i >= 0) return rows(page, 'checkpoints').nth(i);
      await expandRows(page, 'checkpoints', t => t.startsWith(pipeline) || t.startsWith('History'));
      return undefined;
    }, `a second kept version under ${pipeline} › History`, 40_000, 1000);
    await versionRow.hover();
    await versionRow.locator('.action-label[aria-label^="Compare with Previous"]').click();
    const diff = page.locator('.part.editor .editor-group-container.active .monaco-diff-editor').first();
    await diff.waitFor({ timeout: 20_000 });
    const added = await waitFor(async () => {
      const t = (await diff.locator('.editor.modified .view-lines').innerText().catch(() => '')).replace(/\u00a0/g, ' ');
      return t.replace(/\\/g, '').includes('e2e_history_stage') ? t : undefined;
    }, 'the new stage in the right side of the diff', 15_000);
    await shot(page, 'checkpoint-history-diff');
    return `${pipeline}: diff shows the added stage (${added.split('\n').length} lines)`;
  });

  await check(page, 'run comparison: Compare with… opens a diff and a summary', async () => {
    if (runs.length < 2) throw new Error('the fixture has fewer than two runs');
    const [a, b] = [runs[0].rec, runs[1].rec];
    const { runCommand } = h;
    await runCommand(page, 'Harn State: Compare with…');
    const pick = async id => {
      const item = page.locator('.quick-input-widget .monaco-list-row', { hasText: id.slice(0, 20) }).first();
      await item.waitFor({ timeout: 15_000 });
      await item.click();
    };
    await pick(a.id);
    await pick(b.id);
    const frame = await previewFrame(page, `/compare/`, waitFor);
    const title = await waitFor(async () => {
      const t = await frame.locator('h1').first().innerText().catch(() => '');
      return /Compare runs/.test(t) ? t : undefined;
    }, 'the comparison summary', 30_000);
    const stagesText = await frame.locator('p', { hasText: 'Added in B' }).first().innerText();
    await shot(page, 'run-compare-summary');
    // a harn-state: link inside the rendered view opens that document, rendered
    await frame.locator('a', { hasText: 'normalized A' }).first().click();
    const normalized = await previewFrame(page, `/runs/${a.id}.md?normalized=1`, waitFor);
    await normalized.locator('h1', { hasText: 'normalized' }).first().waitFor({ timeout: 15_000 });
    await shot(page, 'run-normalized-from-link');
    await page.locator('.part.editor .tab', { hasText: 'compare:' }).first().click();
    // the side-by-side diff of the normalized documents is the tab before
    const diffTab = page.locator('.part.editor .tab', { hasText: '↔' }).first();
    await diffTab.click();
    await page.locator('.part.editor .editor-group-container.active .monaco-diff-editor').first().waitFor({ timeout: 15_000 });
    await shot(page, 'run-compare-diff');
    return `${title.replace(/\s+/g, ' ').slice(0, 80)}; ${stagesText.slice(0, 80)}`;
  });
}

module.exports = { viewChecks, presetSourceDocuments, previewFrame };
