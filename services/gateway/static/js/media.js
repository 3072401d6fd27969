// What the input panel sends, without the DOM: which files are screenshots and which a
// video, the input mode they make, the URL capture (`POST /api/screenshot`) and the saved
// design systems (`/api/design-systems`: list, create, edit, delete). Shapes are upstream's
// (docs/browser-protocol.md).

export const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/webp"]);
// Formats Gemini (the only provider that reads video) accepts.
export const VIDEO_TYPES = new Set(["video/mp4", "video/webm", "video/quicktime", "video/mpeg"]);
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
// As a base64 data URL this stays well under the gateway's 50 MB WebSocket frame limit.
export const MAX_VIDEO_BYTES = 20 * 1024 * 1024;

/** "image", "video", or an error text saying why the file is refused. */
export function mediaKind(file) {
  const name = file.name || "That file";
  if (IMAGE_TYPES.has(file.type)) {
    return file.size > MAX_IMAGE_BYTES ? { error: `${name} is larger than 20 MB.` } : { kind: "image" };
  }
  if (VIDEO_TYPES.has(file.type)) {
    return file.size > MAX_VIDEO_BYTES ? { error: `${name} is larger than 20 MB.` } : { kind: "video" };
  }
  return { error: `${name} is not a PNG, JPEG or WebP image, or an MP4, WebM or MOV video.` };
}

/** Upstream's modes: one video makes a video create, screenshots an image create. */
export function inputModeOf({ screenshots, video }) {
  if (video) return "video";
  return screenshots.length ? "image" : "text";
}

function authHeaders(token) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body?.detail === "string" && body.detail) return body.detail;
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  return `the server answered ${response.status}`;
}

/**
 * Captures `url` on the server. Resolves to `{dataUrl, name}` or `{error}` (the server's
 * `detail`, which says why: a private address, a page that did not load, a timeout).
 */
export async function captureUrl(url, { token = "", fetchImpl = globalThis.fetch } = {}) {
  const typed = String(url ?? "").trim();
  if (!typed) return { error: "Enter the address of a web page to capture." };
  let response;
  try {
    response = await fetchImpl("/api/screenshot", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...authHeaders(token) },
      body: JSON.stringify({ url: typed }),
    });
  } catch {
    return { error: `Could not capture ${typed}: the server could not be reached.` };
  }
  if (!response.ok) return { error: `Could not capture ${typed}: ${await detailOf(response)}` };
  let body;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (typeof body?.url !== "string" || !body.url.startsWith("data:image/")) {
    return { error: `Could not capture ${typed}: the server sent no image.` };
  }
  const name = typeof body.finalUrl === "string" && body.finalUrl ? body.finalUrl : typed;
  return { dataUrl: body.url, name };
}

function designSystemOf(body) {
  return typeof body?.id === "string" && typeof body.name === "string" && typeof body.content === "string"
    ? { id: body.id, name: body.name, content: body.content }
    : null;
}

/**
 * Creates (no `id`) or updates a design system. Resolves to `{system}` or `{error}`: the
 * server's `detail` (a blank name, content over the size limit, too many systems).
 */
export async function saveDesignSystem({ id = null, name, content }, { token = "", fetchImpl = globalThis.fetch } = {}) {
  const url = id ? `/api/design-systems/${encodeURIComponent(id)}` : "/api/design-systems";
  let response;
  try {
    response = await fetchImpl(url, {
      method: id ? "PATCH" : "POST",
      headers: { "Content-Type": "application/json", ...authHeaders(token) },
      body: JSON.stringify({ name, content }),
    });
  } catch {
    return { error: "Could not save the design system: the server could not be reached." };
  }
  if (!response.ok) return { error: `Could not save the design system: ${await detailOf(response)}` };
  let system = null;
  try {
    system = designSystemOf(await response.json());
  } catch {
    // Saved, but the answer is unreadable: the list, reloaded, still shows it.
  }
  return system ? { system } : { error: "Could not save the design system: the server sent no design system." };
}

/** Deletes a design system: `{}`, or `{error}` with the server's reason. */
export async function deleteDesignSystem(id, { token = "", fetchImpl = globalThis.fetch } = {}) {
  let response;
  try {
    response = await fetchImpl(`/api/design-systems/${encodeURIComponent(id)}`, {
      method: "DELETE",
      headers: authHeaders(token),
    });
  } catch {
    return { error: "Could not delete the design system: the server could not be reached." };
  }
  return response.ok ? {} : { error: `Could not delete the design system: ${await detailOf(response)}` };
}

/** The saved design systems, `[{id, name, content}]`; `[]` when the server cannot say. */
export async function loadDesignSystems(token = "", fetchImpl = globalThis.fetch) {
  try {
    const response = await fetchImpl("/api/design-systems", { headers: authHeaders(token) });
    if (!response.ok) return [];
    const body = await response.json();
    if (!Array.isArray(body)) return [];
    return body.map(designSystemOf).filter(Boolean);
  } catch {
    return [];
  }
}

/** The `designSystem` param: the chosen system's content, null for none (as upstream). */
export function designSystemParam(systems, id) {
  const content = systems.find((s) => s.id === id)?.content ?? "";
  return content.trim() ? content : null;
}
