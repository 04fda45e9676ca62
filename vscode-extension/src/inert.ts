// Text from the server or the project, shown by VS Code, kept inert.
//
// VS Code turns `[label](command:…)` (and https:/file: targets) anywhere in a notification's
// text into a live link, with no escape syntax: clicking it runs the command, in Restricted Mode
// too. Status bar text and quick-pick items render `$(icon)`. Markdown tooltips render links.
// A proposal name, a path, a HITL prompt or a setting value is data: it goes through one of these
// before VS Code shows it. The server does the same on its side (harn_ls/render/message_text.py);
// these keep an older server, or text the extension builds itself, just as inert.

/** Hidden characters that reorder or hide what a message shows: shown as `\uXXXX`. */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
const SHORT: Record<string, string> = { '\r': '\\r', '\t': '\\t', '\n': '\\n' };

function visible(text: string, keepNewlines: boolean): string {
  const hidden = keepNewlines ? HIDDEN : new RegExp(`[\\n\\t${HIDDEN.source.slice(1, -1)}]`, 'g');
  return text.replace(hidden, ch => SHORT[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A whole message with every link broken: a backslash between `]` and `(` / `[` / `:` (no inline
 * link, reference or definition; VS Code's notification parser needs `](` adjacent), and before a
 * `<` that could open an autolink or HTML. Capped at `maxChars`. Applying it twice changes nothing more.
 */
export function inertMessage(text: unknown, maxChars = 2000): string {
  let s = visible(String(text ?? ''), true);
  if (s.length > maxChars) { s = `${s.slice(0, maxChars)}… (${s.length - maxChars} more characters)`; }
  let out = '';
  let backslashes = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if ('([:'.includes(ch) && s[i - 1] === ']') {
      out += '\\';
    } else if (ch === '<' && backslashes % 2 === 0 && /^[A-Za-z/!?]/.test(s[i + 1] ?? '')) {
      out += '\\';
    }
    out += ch;
    backslashes = ch === '\\' ? backslashes + 1 : 0;
  }
  return out;
}

/** One data value inside a message: one line, capped, inert, in a code span. */
export function quoteValue(value: unknown, maxChars = 300): string {
  const raw = String(value ?? '');
  if (!raw) { return '(empty)'; }
  const cut = raw.length > maxChars ? raw.slice(0, maxChars) : raw;
  const body = inertMessage(visible(cut, false), maxChars * 7);
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map(r => r.length));
  const ticks = '`'.repeat(longest + 1);
  const pad = body.startsWith('`') || body.endsWith('`') || !body.trim() ? ' ' : '';
  return `${ticks}${pad}${body}${pad}${ticks}` + (raw.length > maxChars ? ` (… ${raw.length - maxChars} more characters)` : '');
}

/** Text for the status bar or a quick pick, where `$(name)` would draw an icon: shown as written. */
export function noIcons(text: unknown): string {
  return String(text ?? '').replace(/\$\(/g, '\\$(');
}
