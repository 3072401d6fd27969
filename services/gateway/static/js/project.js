// A built project (the react_vite stack, docs/react.md) in the built-in UI, without the
// DOM: its files as a tree, and how its last build went. The option's code (setCode) is
// the page the build made; its sources, the source index.html included, are its other
// files (setFile); each create_file/edit_file result says how the build went.

export const BUILT_PAGE = "dist/index.html";

/** Whether `variant` is a built project: a tool result of it has reported a build. */
export function isBuilt(variant) {
  return variant.build != null;
}

/** A build report from a tool result's output (`output.build`), or null when none. */
export function buildReport(output) {
  const build = output?.build;
  if (!build || typeof build !== "object") return null;
  const errors = Array.isArray(build.errors) ? build.errors.map(String) : [];
  return { ok: build.ok === true, errors };
}

/** Every file of a built project by path: its sources and the built page. */
export function projectFiles(variant) {
  return { ...(variant.files ?? {}), ...(variant.code ? { [BUILT_PAGE]: variant.code } : {}) };
}

/**
 * The rows of a file tree of `paths`: each folder once before what it holds, then each
 * file, by name; `depth` is how far to indent, `path` what a file row opens.
 */
export function fileTree(paths) {
  const rows = [];
  const folders = new Set();
  for (const path of [...paths].sort(byFolders)) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const folder = parts.slice(0, i).join("/");
      if (!folders.has(folder)) {
        folders.add(folder);
        rows.push({ name: `${parts[i - 1]}/`, depth: i - 1, path: null });
      }
    }
    rows.push({ name: parts[parts.length - 1], depth: parts.length - 1, path });
  }
  return rows;
}

// Within a folder, its subfolders' files first (as editors list them), then its own.
function byFolders(a, b) {
  const x = a.split("/");
  const y = b.split("/");
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const xFile = i === x.length - 1;
    const yFile = i === y.length - 1;
    if (xFile !== yFile) return xFile ? 1 : -1;
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return x.length - y.length;
}

/** The build status line: `{text, ok, errors}`, or null before any build. */
export function buildStatus(variant) {
  const build = variant.build;
  if (!build) return null;
  if (build.ok) return { text: "Built: the preview shows this build.", ok: true, errors: [] };
  const count = build.errors.length;
  const text = `Build failed (${count} error${count === 1 ? "" : "s"}): the preview keeps the last good build.`;
  return { text, ok: false, errors: build.errors };
}
