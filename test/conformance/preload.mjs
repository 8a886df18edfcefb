// Preload for running the @modelcontextprotocol/conformance CLIs on Node 20.
//
//   node --import ./test/conformance/preload.mjs node_modules/conformance-legacy/dist/index.js ...
//
// Both CLI builds do `import { globSync, ... } from "fs"` (the only glob API they use is
// `globSync("**/checks.json", { cwd })`, in the tier-check code path). Node 20 has no fs.globSync,
// and a named import of a missing export from a builtin fails at link time; assigning
// `fs.globSync = ...` plus `module.syncBuiltinESMExports()` does not help because a builtin's
// export *names* are fixed. So this file does two things:
//   1. patches the CommonJS `fs` object (fs.globSync, fs.glob, fs.promises.glob) for anything that
//      reads the property at run time;
//   2. registers a module-resolution hook (module.register, Node >= 20.6) that redirects
//      `fs` / `node:fs` imports to a tiny virtual module re-exporting node:fs plus the glob API.
// On a Node that already has fs.globSync it does nothing.
//
// The glob implementation is a small matcher over node:fs (no dependencies): `*`, `?`, `[...]`,
// `[!...]`, `{a,b}` (nested), `**` (any depth, not through dot entries), options `cwd`
// (string or file: URL), `exclude` (function or array of patterns) and `withFileTypes`. As in
// Node's own fs.glob, results are relative to cwd for relative patterns, include directories that
// match, and wildcards do not match names starting with a dot unless the pattern segment does.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const SHIM_URL = 'writeonce-conformance-shim:fs';

// ---------------------------------------------------------------------------------------------
// Module hooks. They run in the loader thread (module.register loads this same file there).

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== SHIM_URL) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url === SHIM_URL) {
    // The main thread has patched the CJS fs object before any user module is loaded, so the
    // virtual module can take the functions from it.
    const source = [
      "import fs from 'node:fs';",
      "export * from 'node:fs';",
      'export default fs;',
      'export const globSync = fs.globSync;',
      'export const glob = fs.glob;',
    ].join('\n');
    return { format: 'module', source, shortCircuit: true };
  }
  return nextLoad(url, context);
}

// ---------------------------------------------------------------------------------------------
// Glob matcher.

function expandBraces(pattern) {
  // Expand the first top-level {a,b,...} group (handles nesting via recursion).
  let depth = 0;
  let start = -1;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') { i++; continue; }
    if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close > 0) { i = close; continue; }
    }
    if (c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}' && depth > 0) {
      depth--;
      if (depth === 0) {
        const body = pattern.slice(start + 1, i);
        const parts = [];
        let d = 0;
        let last = 0;
        for (let j = 0; j < body.length; j++) {
          const b = body[j];
          if (b === '\\') { j++; continue; }
          if (b === '{') d++;
          else if (b === '}') d--;
          else if (b === ',' && d === 0) { parts.push(body.slice(last, j)); last = j + 1; }
        }
        parts.push(body.slice(last));
        if (parts.length < 2) continue; // "{x}" is literal
        const pre = pattern.slice(0, start);
        const post = pattern.slice(i + 1);
        return parts.flatMap((p) => expandBraces(pre + p + post));
      }
    }
  }
  return [pattern];
}

const REGEX_SPECIAL = /[.+^$()|{}\\/]/;

function segmentToMatcher(seg) {
  if (seg === '**') return { globstar: true };
  if (!/[*?[]/.test(seg)) {
    const literal = seg.replace(/\\(.)/g, '$1');
    return { literal };
  }
  let re = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c === '\\' && i + 1 < seg.length) {
      const n = seg[++i];
      re += REGEX_SPECIAL.test(n) || '*?[]'.includes(n) ? '\\' + n : n;
    } else if (c === '*') {
      while (seg[i + 1] === '*') i++;
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const close = seg.indexOf(']', i + 2);
      if (close < 0) { re += '\\['; continue; }
      let cls = seg.slice(i + 1, close);
      let neg = false;
      if (cls[0] === '!' || cls[0] === '^') { neg = true; cls = cls.slice(1); }
      cls = cls.replace(/\\/g, '\\\\').replace(/\]/g, '\\]');
      re += `[${neg ? '^' : ''}${cls}]`;
      i = close;
    } else {
      re += REGEX_SPECIAL.test(c) ? '\\' + c : c;
    }
  }
  return { regex: new RegExp(`^${re}$`), dot: seg.startsWith('.') };
}

function matchSegment(m, name) {
  if (m.literal !== undefined) return m.literal === name;
  if (name.startsWith('.') && !m.dot) return false;
  return m.regex.test(name);
}

function compile(pattern) {
  const normalized = pattern.replace(/\\(?![*?[\]{}!\\])/g, '/');
  const isAbs = path.isAbsolute(normalized);
  const root = isAbs ? path.parse(normalized).root : '';
  const rest = normalized.slice(root.length);
  const segs = rest.split('/').filter((s, i, a) => s !== '' || i === a.length - 1);
  const collapsed = [];
  for (const s of segs) {
    if (s === '**' && collapsed[collapsed.length - 1] === '**') continue;
    collapsed.push(s);
  }
  // A trailing "/" means "directories only".
  const dirOnly = rest.endsWith('/');
  const parts = collapsed.filter((s) => s !== '').map(segmentToMatcher);
  return { isAbs, root, parts, dirOnly };
}

function listDir(abs) {
  try {
    return fs.readdirSync(abs, { withFileTypes: true });
  } catch {
    return [];
  }
}

function isDirEntry(dirent, abs) {
  if (dirent.isDirectory()) return true;
  if (dirent.isSymbolicLink()) {
    try { return fs.statSync(abs).isDirectory(); } catch { return false; }
  }
  return false;
}

function walk(baseAbs, rel, parts, idx, out, dirOnly, isDir) {
  if (idx === parts.length) {
    if (!dirOnly || isDir) out.add(rel);
    return;
  }
  const m = parts[idx];
  const here = rel === '' ? baseAbs : path.join(baseAbs, rel);
  if (m.globstar) {
    // zero directories
    walk(baseAbs, rel, parts, idx + 1, out, dirOnly, isDir);
    if (!isDir) return;
    for (const d of listDir(here)) {
      if (d.name.startsWith('.')) continue;
      const childRel = rel === '' ? d.name : path.join(rel, d.name);
      const childAbs = path.join(here, d.name);
      const childIsDir = isDirEntry(d, childAbs);
      if (childIsDir && !d.isSymbolicLink()) walk(baseAbs, childRel, parts, idx, out, dirOnly, true);
      else if (idx + 1 === parts.length) walk(baseAbs, childRel, parts, idx + 1, out, dirOnly, childIsDir);
    }
    return;
  }
  if (!isDir) return;
  if (m.literal !== undefined) {
    if (m.literal === '.' || m.literal === '..') {
      const childRel = rel === '' ? m.literal : path.join(rel, m.literal);
      walk(baseAbs, childRel, parts, idx + 1, out, dirOnly, true);
      return;
    }
    const childAbs = path.join(here, m.literal);
    let st;
    try { st = fs.statSync(childAbs); } catch { return; }
    const childRel = rel === '' ? m.literal : path.join(rel, m.literal);
    walk(baseAbs, childRel, parts, idx + 1, out, dirOnly, st.isDirectory());
    return;
  }
  for (const d of listDir(here)) {
    if (!matchSegment(m, d.name)) continue;
    const childRel = rel === '' ? d.name : path.join(rel, d.name);
    const childAbs = path.join(here, d.name);
    walk(baseAbs, childRel, parts, idx + 1, out, dirOnly, isDirEntry(d, childAbs));
  }
}

function toPathString(p) {
  if (p instanceof URL) return fileURLToPath(p);
  if (typeof p === 'string' && p.startsWith('file:')) return fileURLToPath(p);
  return p;
}

function makeExcluder(exclude, cwd) {
  if (typeof exclude === 'function') return exclude;
  if (Array.isArray(exclude) && exclude.length > 0) {
    const ms = exclude.map((p) => compileMatcher(p));
    return (rel) => ms.some((f) => f(typeof rel === 'string' ? rel : path.relative(cwd, path.join(rel.parentPath ?? rel.path, rel.name))));
  }
  return () => false;
}

function compileMatcher(pattern) {
  // Whole-path matcher used for `exclude` arrays.
  const alts = expandBraces(pattern).map(compile);
  return (rel) => {
    const names = rel.split(path.sep).filter(Boolean);
    return alts.some(({ parts }) => matchParts(parts, 0, names, 0));
  };
}

function matchParts(parts, pi, names, ni) {
  if (pi === parts.length) return ni === names.length;
  const m = parts[pi];
  if (m.globstar) {
    for (let k = ni; k <= names.length; k++) {
      if (k > ni && names[k - 1].startsWith('.')) break;
      if (matchParts(parts, pi + 1, names, k)) return true;
    }
    return false;
  }
  if (ni >= names.length) return false;
  return matchSegment(m, names[ni]) && matchParts(parts, pi + 1, names, ni + 1);
}

export function globSync(pattern, options = {}) {
  const patterns = Array.isArray(pattern) ? pattern : [pattern];
  const cwd = path.resolve(toPathString(options.cwd ?? process.cwd()));
  const exclude = makeExcluder(options.exclude, cwd);
  const results = new Set();
  for (const p of patterns) {
    for (const alt of expandBraces(String(p))) {
      const { isAbs, root, parts, dirOnly } = compile(alt);
      const found = new Set();
      const base = isAbs ? root : cwd;
      walk(base, '', parts, 0, found, dirOnly, true);
      for (const rel of found) results.add(isAbs ? path.join(root, rel) : rel === '' ? '.' : rel);
    }
  }
  const out = [];
  for (const r of results) {
    const abs = path.resolve(cwd, r);
    if (options.withFileTypes) {
      let dirent;
      const parent = path.dirname(abs);
      dirent = listDir(parent).find((d) => d.name === path.basename(abs));
      if (!dirent) continue;
      if (exclude(dirent)) continue;
      out.push(dirent);
    } else {
      if (exclude(r)) continue;
      out.push(r);
    }
  }
  return out;
}

async function* globAsync(pattern, options = {}) {
  for (const r of globSync(pattern, options)) yield r;
}

function globCallback(pattern, options, callback) {
  if (typeof options === 'function') { callback = options; options = {}; }
  let res;
  try { res = globSync(pattern, options); } catch (err) { process.nextTick(callback, err); return; }
  process.nextTick(callback, null, res);
}

// ---------------------------------------------------------------------------------------------
// Install (main thread only; the loader thread re-imports this file just for the hooks).

if (isMainThread && typeof fs.globSync !== 'function') {
  fs.globSync = globSync;
  fs.glob = globCallback;
  fs.promises.glob = globAsync;
  const { register } = await import('node:module');
  register(import.meta.url, pathToFileURL('./'));
}
