// What the e2e expects to see, read straight from the project copy on disk
// (independently of harn-ls, so the UI is checked against the files themselves).
'use strict';
const fs = require('fs');
const path = require('path');

function readJson(p) {
  try { return JSON.parse(fs.readFileSync(p, 'utf8')); } catch { return undefined; }
}

function readEvents(p) {
  let text;
  try { text = fs.readFileSync(p, 'utf8'); } catch { return []; }
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try { out.push(JSON.parse(line)); } catch { /* torn or bad line: the server flags it */ }
  }
  return out;
}

/** Active store records of a memory namespace (harn-formats §C.3). */
function activeRecords(events) {
  const forgotten = new Set();
  for (const e of events) if (e.type === 'forget') for (const id of e.forgotten_ids || []) forgotten.add(id);
  return events.filter(e => e.type === 'store' && !forgotten.has(e.id));
}

function walk(dir, visit, depth = 0) {
  let entries;
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const ent of entries) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) { if (depth < 8) walk(p, visit, depth + 1); } else visit(p);
  }
}

function messageText(m) {
  if (!m) return '';
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.map(b => (b && typeof b.text === 'string' ? b.text : '')).join(' ');
  if (typeof m.text === 'string') return m.text;
  return '';
}

function load(ws) {
  const harn = path.join(ws, '.harn');
  const fx = { ws, runs: [], transcripts: [], pipelines: [], namespaces: [], facts: [], proposals: [], skills: [] };

  // Run records (.harn-runs/<id>.json) and their transcripts.
  for (const dir of [path.join(ws, '.harn-runs'), path.join(harn, 'runs')]) {
    let names = [];
    try { names = fs.readdirSync(dir); } catch { continue; }
    for (const n of names.filter(n => n.endsWith('.json')).sort()) {
      const rec = readJson(path.join(dir, n));
      if (!rec || typeof rec !== 'object') continue;
      const id = rec.id || n.replace(/\.json$/, '');
      fx.runs.push({ id, tokens: [id, rec.workflow_name, rec.workflow_id, rec.task].filter(t => typeof t === 'string' && t) });
      const trs = [rec.transcript, ...(rec.stages || []).map(s => s && s.transcript)].filter(t => t && typeof t === 'object');
      for (const t of trs) {
        const texts = [...(t.messages || []).map(messageText), ...(t.events || []).map(e => e.text || '')]
          .map(s => s.replace(/\s+/g, ' ').trim()).filter(s => s.length >= 8);
        fx.transcripts.push({ id: t.id, run: id, summary: t.summary, texts });
      }
    }
  }

  // Worker snapshots (.harn/workers/<id>.json) carry transcripts too.
  try {
    for (const n of fs.readdirSync(path.join(harn, 'workers')).filter(n => n.endsWith('.json')).sort()) {
      const w = readJson(path.join(harn, 'workers', n));
      const t = w && w.transcript;
      if (!t || typeof t !== 'object') continue;
      const texts = [...(t.messages || []).map(messageText), ...(t.events || []).map(e => e.text || '')]
        .map(s => s.replace(/\s+/g, ' ').trim()).filter(s => s.length >= 8);
      fx.transcripts.push({ id: t.id, run: null, summary: t.summary, texts });
    }
  } catch { /* none */ }

  // Checkpoints (.harn/checkpoints/<pipeline>.json).
  try {
    for (const n of fs.readdirSync(path.join(harn, 'checkpoints')).filter(n => n.endsWith('.json')).sort()) {
      const data = readJson(path.join(harn, 'checkpoints', n)) || {};
      fx.pipelines.push({ name: n.replace(/\.json$/, ''), keys: Object.keys(data) });
    }
  } catch { /* none */ }

  // Memory namespaces, facts, pattern-learning proposals.
  const memRoot = path.join(harn, 'memory');
  walk(memRoot, p => {
    if (path.basename(p) !== 'events.jsonl') return;
    const ns = path.relative(memRoot, path.dirname(p)).split(path.sep).join('/');
    const events = readEvents(p);
    const active = activeRecords(events);
    fx.namespaces.push({ name: ns, records: active.length });
    for (const r of active) {
      const v = r.value;
      if (!v || typeof v !== 'object') continue;
      if (v.schema === 'harn.fact.v1') {
        for (const ev of v.evidence || []) {
          const m = ev && ev.kind === 'file_range' && /^(.+?):(\d+)(?:-(\d+))?$/.exec(String(ev.ref || ''));
          if (!m) continue;
          const file = m[1];
          if (!fs.existsSync(path.join(ws, file))) continue;
          fx.facts.push({ id: v.id, claim: v.claim, kind: v.kind, confidence: v.confidence, file, start: +m[2], end: +(m[3] || m[2]) });
        }
      }
      if (v.schema === 'harn.pattern_learning.v1' && (v.record_kind || v.kind) === 'pending' && typeof r.key === 'string' && r.key.startsWith('pending:')) {
        fx.proposals.push({ id: v.id, name: v.name, title: v.title, kind: v.kind, support: v.support });
      }
    }
    // Suppressed proposals (state.suppressed_until[id] later than now) are marked.
    const states = active.filter(r => r.key === 'state' && r.value && typeof r.value === 'object')
      .sort((a, b) => String(a.value.updated_at || '').localeCompare(String(b.value.updated_at || '')));
    const state = states.length ? states[states.length - 1].value : undefined;
    if (state && state.suppressed_until) {
      const now = new Date().toISOString();
      for (const p of fx.proposals) if (String(state.suppressed_until[p.id] || '') > now) p.suppressed = true;
    }
  });

  // Skills already on disk (project layers).
  for (const root of ['.harn/skills', '.claude/skills', '.burin/skills']) {
    try {
      for (const n of fs.readdirSync(path.join(ws, root))) {
        if (fs.existsSync(path.join(ws, root, n, 'SKILL.md'))) fx.skills.push({ name: n, root });
      }
    } catch { /* none */ }
  }
  return fx;
}

module.exports = { load, activeRecords, readEvents };
