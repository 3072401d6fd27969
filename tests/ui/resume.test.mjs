// Unit tests of the UI's re-attach after a dropped connection (GenerationSocket in
// services/gateway/static/js/protocol.js): the gateway's resumable extension, client side.
// The browser's WebSocket and timers are stood in for; the test plays the server.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import {
  APP_ERROR_CODE,
  GenerationSocket,
  NORMAL_CLOSE,
  RESUME_DELAYS_MS,
  SERVICE_RESTART,
  USER_CLOSE_CODE,
  isFinalClose,
} from "../../services/gateway/static/js/protocol.js";
import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

const DROPPED = 1006; // what the browser reports when the network drops

class FakeWebSocket {
  static all = [];

  constructor(url) {
    this.url = url;
    this.sent = [];
    this.closed = [];
    this.listeners = {};
    FakeWebSocket.all.push(this);
  }

  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }

  emit(type, event = {}) {
    for (const listener of this.listeners[type] ?? []) listener(event);
  }

  frame(frame) {
    this.emit("message", { data: JSON.stringify(frame) });
  }

  send(data) {
    this.sent.push(JSON.parse(data));
  }

  close(code) {
    this.closed.push(code);
  }
}

beforeEach(() => {
  FakeWebSocket.all = [];
  globalThis.WebSocket = FakeWebSocket;
});

// Timers run only when the test says so, and it sees every delay asked for.
function fakeTimers() {
  const timers = { pending: new Map(), delays: [], next: 0 };
  timers.set = (fn, ms) => {
    timers.delays.push(ms);
    timers.pending.set(++timers.next, fn);
    return timers.next;
  };
  timers.clear = (id) => timers.pending.delete(id);
  timers.fire = () => {
    const due = [...timers.pending.values()];
    timers.pending.clear();
    for (const fn of due) fn();
  };
  return timers;
}

function resumableSocket() {
  const timers = fakeTimers();
  const seen = { frames: [], closes: [], reconnecting: [], resumed: 0 };
  const socket = new GenerationSocket(
    "ws://127.0.0.1:1/generate-code",
    { generationType: "create" },
    {
      onFrame: (frame) => seen.frames.push(frame),
      onClose: (close) => seen.closes.push(close),
      onReconnecting: (state) => seen.reconnecting.push(state),
      onResumed: () => seen.resumed++,
    },
    { setTimer: timers.set, clearTimer: timers.clear },
  );
  socket.start();
  return { socket, timers, seen, ws: () => FakeWebSocket.all.at(-1) };
}

// A first socket that learnt the generation id and saw frames up to seq 7.
function streaming() {
  const run = resumableSocket();
  const ws = run.ws();
  ws.emit("open");
  ws.frame({ type: "generation", value: "g1" });
  ws.frame({ type: "variantCount", variantIndex: 0, value: "2", seq: 2 });
  ws.frame({ type: "setCode", variantIndex: 0, value: "<html>" });
  ws.frame({ type: "thinking", variantIndex: 0, value: "hm", eventId: "t", seq: 7 });
  ws.frame({ type: "variantModels", variantIndex: 0, data: { models: ["a"] }, seq: 1 });
  return run;
}

test("only 1000, 4332 and 4333 are the server's last word", () => {
  assert.deepEqual(
    [NORMAL_CLOSE, APP_ERROR_CODE, USER_CLOSE_CODE, 1001, 1006, 1008, 1011].map(isFinalClose),
    [true, true, true, false, false, false, false],
  );
});

test("the params opt in to resuming; the generation frame is the socket's, not the UI's", () => {
  const { seen, ws } = streaming();
  assert.deepEqual(ws().sent, [{ generationType: "create", resumable: true, codeStream: "append", scoreFidelity: true }]);
  assert.deepEqual(
    seen.frames.map((f) => f.type),
    ["variantCount", "setCode", "thinking", "variantModels"],
  );
});

test("a drop re-attaches after the last seq seen and carries on with the new socket", () => {
  const { timers, seen, ws } = streaming();
  const first = ws();
  first.emit("close", { code: DROPPED, reason: "" });
  assert.deepEqual(seen.reconnecting, [{ attempt: 1, of: RESUME_DELAYS_MS.length, code: DROPPED }]);
  assert.deepEqual([FakeWebSocket.all.length, timers.delays], [1, [RESUME_DELAYS_MS[0]]]);

  timers.fire();
  const second = ws();
  assert.notEqual(second, first);
  second.emit("open");
  // The highest seq, though variantModels (seq 1) arrived last.
  assert.deepEqual(second.sent, [{ resumeGenerationId: "g1", afterSequence: 7, codeStream: "append", scoreFidelity: true }]);
  assert.equal(seen.resumed, 0);
  second.frame({ type: "setCode", variantIndex: 0, value: "<html><body>" });
  assert.equal(seen.resumed, 1);
  // The old socket is not listened to any more.
  first.frame({ type: "setCode", variantIndex: 0, value: "stale" });
  second.frame({ type: "variantComplete", variantIndex: 0, value: "done", seq: 9 });
  second.emit("close", { code: NORMAL_CLOSE, reason: "" });
  assert.deepEqual(
    seen.frames.slice(4).map((f) => [f.type, f.value]),
    [
      ["setCode", "<html><body>"],
      ["variantComplete", "done"],
    ],
  );
  assert.deepEqual(seen.closes, [{ code: NORMAL_CLOSE, reason: "" }]);
});

test("re-attaching backs off, and gives up after the last try with the drop's code", () => {
  const { timers, seen, ws } = streaming();
  ws().emit("close", { code: DROPPED, reason: "" });
  for (let i = 1; i < RESUME_DELAYS_MS.length; i++) {
    timers.fire();
    ws().emit("close", { code: DROPPED, reason: "" }); // the server is unreachable
  }
  assert.deepEqual(timers.delays, RESUME_DELAYS_MS);
  assert.deepEqual(
    seen.reconnecting.map((r) => r.attempt),
    RESUME_DELAYS_MS.map((_, i) => i + 1),
  );
  assert.deepEqual(seen.closes, []);
  timers.fire();
  ws().emit("close", { code: DROPPED, reason: "" });
  assert.deepEqual(seen.closes, [{ code: DROPPED, reason: "" }]);
  assert.equal(timers.pending.size, 0);
});

test("a draining gateway's 1012 re-attaches at once, and a 1013 backs off like a drop", () => {
  const { timers, seen, ws } = streaming();
  ws().emit("close", { code: SERVICE_RESTART, reason: "The gateway is restarting" });
  assert.deepEqual(timers.delays, [0]);
  timers.fire();
  ws().emit("open");
  assert.deepEqual(ws().sent, [{ resumeGenerationId: "g1", afterSequence: 7, codeStream: "append" }]);
  ws().emit("close", { code: 1013, reason: "The agent is restarting" });
  assert.deepEqual(timers.delays, [0, RESUME_DELAYS_MS[1]]);
  assert.deepEqual(
    seen.reconnecting.map((r) => r.code),
    [SERVICE_RESTART, 1013],
  );
  assert.deepEqual(seen.closes, []);
});

test("a re-attached socket that delivers frames earns a fresh set of tries", () => {
  const { timers, seen, ws } = streaming();
  ws().emit("close", { code: DROPPED, reason: "" });
  timers.fire();
  ws().emit("close", { code: DROPPED, reason: "" });
  timers.fire();
  ws().emit("open");
  ws().frame({ type: "status", variantIndex: 1, value: "…", seq: 8 });
  ws().emit("close", { code: 1001, reason: "" });
  assert.deepEqual(
    seen.reconnecting.map((r) => r.attempt),
    [1, 2, 1],
  );
  timers.fire();
  ws().emit("open");
  assert.deepEqual(ws().sent, [{ resumeGenerationId: "g1", afterSequence: 8, codeStream: "append", scoreFidelity: true }]);
});

test("final closes and drops before the generation id are not re-attached", () => {
  for (const code of [NORMAL_CLOSE, APP_ERROR_CODE, USER_CLOSE_CODE]) {
    const { seen, ws, timers } = streaming();
    ws().emit("close", { code, reason: "why" });
    assert.deepEqual([seen.closes, seen.reconnecting, timers.delays], [[{ code, reason: "why" }], [], []]);
  }
  const { seen, ws, timers } = resumableSocket();
  ws().emit("open");
  ws().emit("close", { code: DROPPED, reason: "" });
  assert.deepEqual([seen.closes, timers.delays], [[{ code: DROPPED, reason: "" }], []]);
});

test("a failed re-attach (the generation is gone) ends with the server's error", () => {
  const { timers, seen, ws } = streaming();
  ws().emit("close", { code: DROPPED, reason: "" });
  timers.fire();
  ws().emit("open");
  ws().frame({ type: "error", value: "Not found: no generation 'g1'" });
  ws().emit("close", { code: APP_ERROR_CODE, reason: "" });
  assert.equal(seen.frames.at(-1).value, "Not found: no generation 'g1'");
  assert.deepEqual(seen.closes, [{ code: APP_ERROR_CODE, reason: "" }]);
});

test("a cancel while waiting to re-attach re-attaches only to close with 4333", () => {
  const { socket, timers, seen, ws } = streaming();
  ws().emit("close", { code: DROPPED, reason: "" });
  socket.cancel();
  assert.equal(timers.pending.size, 0);
  const last = ws();
  assert.equal(FakeWebSocket.all.length, 2);
  last.emit("open");
  assert.deepEqual([last.sent, last.closed], [[{ resumeGenerationId: "g1", afterSequence: 7, codeStream: "append", scoreFidelity: true }], [USER_CLOSE_CODE]]);
  last.frame({ type: "setCode", variantIndex: 0, value: "x" });
  last.emit("close", { code: USER_CLOSE_CODE, reason: "" });
  assert.deepEqual([seen.frames.length, seen.closes, seen.resumed], [4, [], 0]);
});

test("a cancel while a re-attach is connecting cancels through that socket", () => {
  const { socket, timers, ws } = streaming();
  ws().emit("close", { code: DROPPED, reason: "" });
  timers.fire();
  const connecting = ws();
  socket.cancel();
  assert.deepEqual([connecting.closed, FakeWebSocket.all.length], [[], 2]);
  connecting.emit("open");
  assert.deepEqual(connecting.closed, [USER_CLOSE_CODE]);
  assert.deepEqual(connecting.sent, [{ resumeGenerationId: "g1", afterSequence: 7, codeStream: "append", scoreFidelity: true }]);
});

test("a cancel on a live socket just closes it with 4333", () => {
  const { socket, ws } = streaming();
  socket.cancel();
  socket.cancel();
  assert.deepEqual([ws().closed, FakeWebSocket.all.length], [[USER_CLOSE_CODE], 1]);
});

test("appends seen before a drop are replaced by the re-attach's whole code", () => {
  const { timers, seen, ws } = streaming();
  const commit = newCommit({ kind: "create", label: "", seedHistory: [], count: 1 });
  const first = ws();
  first.frame({ type: "appendCode", variantIndex: 0, value: "<body>" });
  // Appends carry no seq: this one came from events after seq 7, which the resume replays.
  first.frame({ type: "appendCode", variantIndex: 0, value: "<h1>" });
  first.emit("close", { code: DROPPED, reason: "" });
  timers.fire();
  const second = ws();
  second.emit("open");
  assert.deepEqual(second.sent, [{ resumeGenerationId: "g1", afterSequence: 7, codeStream: "append", scoreFidelity: true }]);
  // The gateway starts a re-attached socket with each variant's code as of seq 7, whole.
  second.frame({ type: "setCode", variantIndex: 0, value: "<html><body>" });
  second.frame({ type: "appendCode", variantIndex: 0, value: "<h1>Hi</h1></body></html>" });
  for (const frame of seen.frames) applyFrame(commit, frame);
  assert.equal(commit.variants[0].code, "<html><body><h1>Hi</h1></body></html>");
});
