// harnState.* settings as the extension reads them, and as it hands them to the server.
//
// A setting that names a path or a program is restricted (package.json
// capabilities.untrustedWorkspaces.restrictedConfigurations): in Restricted Mode VS Code ignores
// the value a workspace's .vscode/settings.json gives it. This module reads those settings the
// same way itself (the user's value or the default, never the folder's) so that no other path
// — an older VS Code, a languageclient answering workspace/configuration — can bring it back.
import * as vscode from 'vscode';

/** Keep equal to package.json restrictedConfigurations (tests/packaging checks it), without the `harnState.` prefix. */
export const RESTRICTED_SETTINGS: readonly string[] = ['server.path', 'server.args', 'harnPath', 'harnEnv', 'skillRoot', 'projectRoots'];

/** One harnState.* value: in an untrusted workspace a restricted one comes from user settings or the default. */
export function setting<T>(key: string, scope?: vscode.Uri): T | undefined {
  const cfg = vscode.workspace.getConfiguration('harnState', scope);
  if (vscode.workspace.isTrusted || !RESTRICTED_SETTINGS.includes(key)) { return cfg.get<T>(key); }
  const seen = cfg.inspect<T>(key);
  return seen?.globalValue ?? seen?.defaultValue;
}

/** A plain-object copy of the harnState.* settings (nested like the JSON settings), restricted ones read as `setting` does. */
export function harnSettings(scope?: vscode.Uri): Record<string, unknown> {
  const all = JSON.parse(JSON.stringify(vscode.workspace.getConfiguration('harnState', scope))) as Record<string, unknown>;
  if (vscode.workspace.isTrusted) { return all; }
  for (const key of RESTRICTED_SETTINGS) {
    const parts = key.split('.');
    let obj = all;
    for (const p of parts.slice(0, -1)) {
      if (typeof obj[p] !== 'object' || obj[p] === null) { obj[p] = {}; }
      obj = obj[p] as Record<string, unknown>;
    }
    const value = setting<unknown>(key, scope);
    const last = parts[parts.length - 1];
    if (value === undefined) { delete obj[last]; } else { obj[last] = value; }
  }
  return all;
}
