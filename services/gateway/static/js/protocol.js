// The upstream screenshot-to-code `/generate-code` WebSocket protocol, client side.
//
// The browser opens the socket and sends exactly one params frame; the server streams
// JSON frames and closes with 1000 (complete), 4332 (after an `error` frame) or 4333
// (cancelled). The client cancels by closing with 4333. Our UI also opts in to the
// gateway's resumable extension (docs/browser-protocol.md), so a dropped connection
// re-attaches to the running generation instead of losing it, and to its append-only
// code stream, so a streamed file arrives once instead of whole on every step.

import { selectedPrompt } from "./select.js";
import { credentialParams } from "./settings.js";

export const NORMAL_CLOSE = 1000;
export const APP_ERROR_CODE = 4332;
export const USER_CLOSE_CODE = 4333;
/** A gateway that is draining (a rolling restart) closes resumable sockets with this. */
export const SERVICE_RESTART = 1012;

/** Our extension (docs/browser-protocol.md): new code arrives as appends, not whole files. */
export const CODE_STREAM = "append";

/**
 * The wait before each re-attach after a dropped connection (or a 1013, "try again later":
 * the generation's agent is restarting); then the UI gives up. A 1012 re-attaches at once.
 */
export const RESUME_DELAYS_MS = [250, 1000, 2000, 4000, 8000];

/**
 * Whether a close is the server's last word: 1000, 4332 and 4333. Any other code (1006
 * when the network drops, 1001 when a proxy restarts, 1008 when the browser fell behind)
 * means only the connection was lost, and the generation may still be running.
 */
export function isFinalClose(code) {
  return code === NORMAL_CLOSE || code === APP_ERROR_CODE || code === USER_CLOSE_CODE;
}

export const STACKS = [
  { id: "html_tailwind", label: "HTML + Tailwind" },
  { id: "html_css", label: "HTML + CSS" },
  { id: "react_tailwind", label: "React + Tailwind" },
  { id: "bootstrap", label: "Bootstrap" },
  { id: "vue_tailwind", label: "Vue + Tailwind (beta)" },
  { id: "ionic_tailwind", label: "Ionic + Tailwind (beta)" },
  { id: "react_vite", label: "React + TypeScript + Tailwind (Vite project)" },
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

/**
 * A create request (upstream `doCreate` / `doCreateFromText`): a video create sends its
 * one video in `prompt.videos` and never asks for asset extraction; `designSystem` is
 * the chosen system's content, or null.
 */
export function createParams({ inputMode, text, images, videos = [], stack, settings, sources = [], designSystem = null, imageMeta = null }) {
  return {
    generationType: "create",
    inputMode,
    prompt: {
      text,
      images: inputMode === "image" ? [...images] : [],
      videos: inputMode === "video" ? videos.slice(0, 1) : [],
      ...(inputMode === "image" && imageMeta ? { imageMeta } : {}),
    },
    generatedCodeConfig: stack,
    isImageGenerationEnabled: Boolean(settings.imageGeneration),
    isAssetExtractionEnabled: inputMode === "image" && Boolean(settings.assetExtraction),
    designSystem,
    ...credentialParams(settings, sources),
  };
}

function message(role, text, images = [], videos = []) {
  return { role, text, images: [...images], videos: [...videos] };
}

/**
 * The history of a variant to build an update on: its own history, with its code as the
 * assistant turn when the history does not end with one (a variant that was cancelled or
 * failed after writing code).
 */
export function variantHistoryForUpdate(variant) {
  const history = variant.history.map((m) => message(m.role, m.text, m.images, m.videos ?? []));
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
export function updateParams({ project, commit, parent, text, images = [], settings, sources = [], designSystem = null, selected = null }) {
  const base = variantHistoryForUpdate(parent);
  const variantHistory = [...base, message("user", text, images)];
  const params = {
    generationType: "update",
    inputMode: project.inputMode,
    // With an element picked in the preview (select.js), as upstream sends it.
    prompt: { text, images: [...images], videos: [], ...selectedPrompt(text, selected) },
    history: base.length === 0 && parent.code.trim() ? [] : variantHistory,
    optionCodes: commit.variants.map((v) => v.code ?? ""),
    generatedCodeConfig: project.stack,
    isImageGenerationEnabled: Boolean(settings.imageGeneration),
    isAssetExtractionEnabled: project.inputMode === "image" && Boolean(settings.assetExtraction),
    designSystem,
    ...credentialParams(settings, sources),
  };
  if (parent.code.trim()) params.fileState = { path: "index.html", content: parent.code };
  // A site of several files: the update gets the whole project, so it can change any page.
  const others = Object.entries(parent.files ?? {});
  if (others.length) params.files = Object.fromEntries([["index.html", parent.code], ...others]);
  return { params, variantHistory };
}

/**
 * One generation, over one socket or, after drops, several. `onFrame(frame)` gets every
 * parsed frame; `onClose({code, reason})` is called once, when the server closes for good
 * or re-attaching failed. A dropped connection calls `onReconnecting({attempt, of})` and
 * re-attaches with `{resumeGenerationId, afterSequence}` (the last `seq` seen); the first
 * frame back calls `onResumed()`, and the frames that follow continue where the old socket
 * stopped (the code of every variant first, whole). After `cancel()` no callback fires
 * any more: the caller owns the outcome.
 */
export class GenerationSocket {
  constructor(url, params, handlers, { delays = RESUME_DELAYS_MS, setTimer, clearTimer } = {}) {
    this.url = url;
    this.params = params;
    this.handlers = handlers;
    this.delays = delays;
    // Wrapped: the browser's timers throw when called as a method of another object.
    this.setTimer = setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = clearTimer ?? ((id) => clearTimeout(id));
    this.ws = null; // the current socket; null while waiting to re-attach
    this.opened = false; // the current socket has sent its first frame
    this.timer = null;
    this.done = false;
    this.cancelling = false;
    this.generationId = null; // from the first frame, `{"type": "generation"}`
    this.lastSeq = 0;
    this.retries = 0; // re-attach attempts since the last frame received
  }

  start() {
    this.connect();
  }

  /**
   * The first frame of a socket: the params, or a re-attach once the generation is known.
   * Both ask for append-only code (`appendCode` frames, state.js); a re-attach starts with
   * each variant's whole code, so the buffer it appends to is right again. Both ask for
   * the fidelity scores, which the cards show: only then does the server score, and
   * keep the socket open for them.
   */
  firstFrame() {
    const codeStream = CODE_STREAM;
    const scoreFidelity = true;
    if (this.generationId === null) {
      return { ...this.params, resumable: true, codeStream, scoreFidelity };
    }
    const after = this.lastSeq;
    return { resumeGenerationId: this.generationId, afterSequence: after, codeStream, scoreFidelity };
  }

  connect() {
    const ws = new WebSocket(this.url);
    const resuming = this.generationId !== null;
    let heard = false;
    this.ws = ws;
    this.opened = false;
    ws.addEventListener("open", () => {
      if (this.ws !== ws || (this.done && !this.cancelling)) return;
      this.opened = true;
      ws.send(JSON.stringify(this.firstFrame()));
      if (this.cancelling) {
        // Re-attached only to say cancel: the server held the generation for us.
        ws.close(USER_CLOSE_CODE);
      } else if (!resuming) {
        this.handlers.onOpen?.();
      }
    });
    ws.addEventListener("message", (event) => {
      if (this.done || this.ws !== ws || typeof event.data !== "string") return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (!frame || typeof frame.type !== "string") return;
      if (!heard) {
        heard = true;
        this.retries = 0;
        if (resuming) this.handlers.onResumed?.();
      }
      if (Number.isInteger(frame.seq) && frame.seq > this.lastSeq) this.lastSeq = frame.seq;
      if (frame.type === "generation") {
        if (typeof frame.value === "string" && frame.value) this.generationId = frame.value;
        return;
      }
      this.handlers.onFrame(frame);
    });
    ws.addEventListener("close", (event) => {
      if (this.done || this.ws !== ws) return;
      if (this.generationId !== null && !isFinalClose(event.code) && this.retries < this.delays.length) {
        // A draining gateway asked us to go elsewhere: no reason to wait.
        const delay = event.code === SERVICE_RESTART ? 0 : this.delays[this.retries];
        this.retries++;
        this.ws = null;
        this.handlers.onReconnecting?.({ attempt: this.retries, of: this.delays.length, code: event.code });
        this.timer = this.setTimer(() => {
          this.timer = null;
          this.connect();
        }, delay);
        return;
      }
      this.done = true;
      this.handlers.onClose({ code: event.code, reason: event.reason });
    });
  }

  /**
   * Stops listening without cancelling: a plain close (1000), after which the server
   * holds the generation for a re-attach, so what it still does (its options' scores,
   * once every option ended) finishes and reaches the run record.
   */
  detach() {
    if (this.done) return;
    this.done = true;
    if (this.timer !== null) {
      this.clearTimer(this.timer);
      this.timer = null;
    }
    const ws = this.ws;
    this.ws = null;
    try {
      ws?.close(1000);
    } catch {
      // Closing can only fail on a bad code; 1000 is valid.
    }
  }

  /** Closes with 4333, which tells the gateway to cancel the generation. */
  cancel() {
    if (this.done) return;
    this.done = true;
    if (this.timer !== null) {
      this.clearTimer(this.timer);
      this.timer = null;
    }
    if (this.generationId !== null && (this.ws === null || !this.opened)) {
      // Between sockets the server is holding the generation for a re-attach (for
      // 30 s): re-attach to cancel it now rather than let it run on unseen.
      this.cancelling = true;
      if (this.ws === null) this.connect();
      return;
    }
    try {
      this.ws?.close(USER_CLOSE_CODE);
    } catch {
      // Closing can only fail on a bad code; ours is valid.
    }
  }
}
