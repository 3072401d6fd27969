// A site of several files in the built-in UI, without the DOM: the page a preview renders
// and the download. A preview renders a page from a string (srcdoc), where a relative
// `<link href="site.css">` or `<script src="app.js">` loads nothing, so the project's own
// stylesheets and scripts are put inline, as the screenshot tool does for the model
// (services/tools/preview_tool.py). A site downloads as the gateway's zip of its files
// (`POST /api/export` with `files`), a single page as its index.html.

import { isBuilt, projectFiles } from "./project.js";

const STYLESHEET = /<link\b[^>]*\brel=["']?stylesheet["']?[^>]*\bhref=["']([^"'>]+)["'][^>]*>/gi;
const SCRIPT = /<script\b([^>]*)\bsrc=["']([^"'>]+)["']([^>]*)>\s*<\/script>/gi;

/** Every file of `variant`, its entry page (its code) first under index.html; a built
 * project's code is its build's page, its index.html a source (project.js). */
export function siteFiles(variant) {
  if (isBuilt(variant)) return projectFiles(variant);
  return { "index.html": variant.code ?? "", ...(variant.files ?? {}) };
}

/** `html`, the page at `path` of `files` (path → content), with the project's own
 * stylesheets and scripts inline; links to anything else are left as they are. */
export function inlineProject(html, path, files) {
  const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
  const local = (href) => {
    const name = (folder + href).replace(/^\.\//, "");
    return Object.hasOwn(files, name) && name !== path ? files[name] : null;
  };
  return html
    .replace(STYLESHEET, (tag, href) => {
      const css = local(href);
      // A function replacement: `$&` and the like in the CSS stay as they are.
      return css === null ? tag : `<style>${css.replace(/<\/style/gi, "<\\/style")}</style>`;
    })
    .replace(SCRIPT, (tag, before, src, after) => {
      const js = local(src);
      if (js === null) return tag;
      const attributes = `${before} ${after}`.trim().split(/\s+/).filter(Boolean).join(" ");
      return `<script${attributes ? " " + attributes : ""}>${js.replace(/<\/script/gi, "<\\/script")}</script>`;
    });
}

/**
 * What to download for `variant`: `{blob, name}` (its index.html, or a zip of its site from
 * the gateway) or `{error}`. `offline`: always the gateway's zip, with the CDN runtimes the
 * pages load bundled beside them, so it opens with no network (docs/offline.md).
 */
export async function downloadable(variant, { token = "", fetchImpl = globalThis.fetch, offline = false } = {}) {
  if (!variant.code) return { error: "No code to download yet." };
  const site = Object.keys(variant.files ?? {}).length > 0;
  if (!site && !offline) {
    return { blob: new Blob([variant.code], { type: "text/html" }), name: "index.html" };
  }
  const built = isBuilt(variant);
  const what = built ? "the project" : site ? "the site" : "the page";
  const body = built ? { files: siteFiles(variant), stack: "react_vite" } : site ? { files: siteFiles(variant) } : { code: variant.code };
  let response;
  try {
    response = await fetchImpl("/api/export", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(offline && !built ? { ...body, offline: true } : body),
    });
  } catch {
    return { error: `Could not download ${what}: the server could not be reached.` };
  }
  if (!response.ok) {
    let detail = `the server answered ${response.status}`;
    try {
      const body = await response.json();
      if (typeof body?.detail === "string") detail = body.detail;
    } catch {
      // Not JSON (a proxy's error page): the status says enough.
    }
    return { error: `Could not download ${what}: ${detail}` };
  }
  const name = built ? "react-app.zip" : offline ? `${site ? "site" : "page"}-offline.zip` : "site.zip";
  return { blob: await response.blob(), name };
}
