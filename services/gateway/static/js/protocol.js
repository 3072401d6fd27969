// The upstream screenshot-to-code `/generate-code` WebSocket protocol, client side.
//
// The browser opens the socket and sends exactly one params frame; the server streams
// JSON frames and closes with 1000 (complete) or 4332 (after an `error` frame). The
// client cancels by closing with 4333.

export const NORMAL_CLOSE = 1000;
export const APP_ERROR_CODE = 4332;
export const USER_CLOSE_CODE = 4333;

export const STACKS = [
  { id: "html_tailwind", label: "HTML + Tailwind" },
  { id: "html_css", label: "HTML + CSS" },
  { id: "react_tailwind", label: "React + Tailwind" },
  { id: "bootstrap", label: "Bootstrap" },
  { id: "vue_tailwind", label: "Vue + Tailwind (beta)" },
  { id: "ionic_tailwind", label: "Ionic + Tailwind (beta)" },
];

/** The socket URL, with the gateway access token (if any) as `?token=`. */
export function generateCodeUrl(token = "", location = window.location) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = token ? `?token=${encodeURIComponent(token)}` : "";
  return `${scheme}://${location.host}/generate-code${query}`;
}

const TOKEN_KEY = "s2c.gatewayToken";

/**
 * The gateway access token (S2C_GATEWAY_TOKEN): the UI is opened once as `/?token=…`;
 * the token is kept in sessionStorage (this tab only) and removed from the address bar.
 */
export function gatewayToken() {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get("token");
  if (fromUrl) {
    try {
      sessionStorage.setItem(TOKEN_KEY, fromUrl);
    } catch {
      // Storage disabled: the token still works for this page load.
    }
    url.searchParams.delete("token");
    history.replaceState(history.state, "", `${url.pathname}${url.search}${url.hash}`);
    return fromUrl;
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

/** The key fields of every params frame: null unless the user entered one in Settings. */
function keyParams(settings) {
  const value = (v) => (typeof v === "string" && v.trim() ? v.trim() : null);
  return {
    openAiApiKey: value(settings.openAiApiKey),
    anthropicApiKey: value(settings.anthropicApiKey),
    geminiApiKey: value(settings.geminiApiKey),
    replicateApiKey: value(settings.replicateApiKey),
    openAiBaseURL: value(settings.openAiBaseURL),
  };
}

/** A create request (upstream `doCreate` / `doCreateFromText`). */
export function createParams({ inputMode, text, images, stack, settings }) {
  return {
    generationType: "create",
    inputMode,
    prompt: { text, images: inputMode === "image" ? [...images] : [], videos: [] },
    generatedCodeConfig: stack,
    isImageGenerationEnabled: Boolean(settings.imageGeneration),
    isAssetExtractionEnabled: inputMode === "image" && Boolean(settings.assetExtraction),
    ...keyParams(settings),
  };
}

function message(role, text, images = []) {
  return { role, text, images: [...images], videos: [] };
}

/**
 * The history of a variant to build an update on: its own history, with its code as the
 * assistant turn when the history does not end with one (a variant that was cancelled or
 * failed after writing code).
 */
export function variantHistoryForUpdate(variant) {
  const history = variant.history.map((m) => message(m.role, m.text, m.images));
  const last = history[history.length - 1];
  if (history.length && variant.code.trim() && last.role !== "assistant") {
    history.push(message("assistant", variant.code));
  }
  return history;
}

/**
 * An update request on `parent` (a variant of `commit`), as upstream's
 * `buildUpdateGenerationRequest`: history = the parent variant's history plus the new user
 * instruction (`[]` when the parent only has code), fileState = its code, optionCodes = the
 * code of every variant of the commit, and the project's original input mode.
 */
export function updateParams({ project, commit, parent, text, images = [], settings }) {
  const base = variantHistoryForUpdate(parent);
  const variantHistory = [...base, message("user", text, images)];
  const params = {
    generationType: "update",
    inputMode: project.inputMode,
    prompt: { text, images: [...images], videos: [] },
    history: base.length === 0 && parent.code.trim() ? [] : variantHistory,
    optionCodes: commit.variants.map((v) => v.code ?? ""),
    generatedCodeConfig: project.stack,
    isImageGenerationEnabled: Boolean(settings.imageGeneration),
    isAssetExtractionEnabled: project.inputMode === "image" && Boolean(settings.assetExtraction),
    ...keyParams(settings),
  };
  if (parent.code.trim()) params.fileState = { path: "index.html", content: parent.code };
  return { params, variantHistory };
}

/**
 * One generation over one socket. `onFrame(frame)` gets every parsed frame;
 * `onClose({code, reason})` is called once when the server closes or the connection
 * drops. After `cancel()` no callback fires any more: the caller owns the outcome.
 */
export class GenerationSocket {
  constructor(url, params, { onOpen, onFrame, onClose }) {
    this.url = url;
    this.params = params;
    this.handlers = { onOpen, onFrame, onClose };
    this.ws = null;
    this.done = false;
  }

  start() {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (this.done) return;
      ws.send(JSON.stringify(this.params));
      this.handlers.onOpen?.();
    });
    ws.addEventListener("message", (event) => {
      if (this.done || typeof event.data !== "string") return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame && typeof frame.type === "string") this.handlers.onFrame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (this.done) return;
      this.done = true;
      this.handlers.onClose({ code: event.code, reason: event.reason });
    });
  }

  /** Closes with 4333, which tells the gateway to cancel the generation. */
  cancel() {
    if (this.done) return;
    this.done = true;
    try {
      this.ws?.close(USER_CLOSE_CODE);
    } catch {
      // Closing can only fail on a bad code; ours is valid.
    }
  }
}
