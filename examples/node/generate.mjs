#!/usr/bin/env node
// Streams one generation from the s2c agent service and writes each variant's HTML.
//
//   node generate.mjs [--out DIR] [--stack STACK] [--variants N] [--model ID]... PROMPT_OR_IMAGE
//
// The agent address comes from S2C_AGENT_ADDR (default 127.0.0.1:50051). When the suite
// is locked down, S2C_GRPC_TOKEN is sent as a bearer token and S2C_GRPC_TLS_CA (a PEM CA
// bundle) switches to TLS, as for the services themselves. The .proto files are loaded
// at runtime from the repository's protos/ directory; nothing is generated ahead of time.
//
// Exit codes: 0 when the generation completed and every variant produced code,
// 1 when the generation or a variant failed (or was cancelled), 2 on bad usage or
// an RPC error (e.g. the agent is unreachable), 130 on Ctrl+C.

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const HERE = dirname(fileURLToPath(import.meta.url));
const PROTOS = resolve(HERE, '..', '..', 'protos');
const STACKS = [
  'html_tailwind',
  'html_css',
  'react_tailwind',
  'bootstrap',
  'vue_tailwind',
  'ionic_tailwind',
];
const IMAGE_TYPES = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};
const USAGE =
  'usage: node generate.mjs [--out DIR] [--stack STACK] [--variants N] [--model ID]... ' +
  'PROMPT_OR_IMAGE';

function fail(message, code = 2) {
  process.stderr.write(`generate.mjs: ${message}\n`);
  process.exit(code);
}

function parseCommandLine() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        out: { type: 'string', default: 's2c-out' },
        stack: { type: 'string', default: 'html_tailwind' },
        variants: { type: 'string', default: '0' },
        model: { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    fail(`${error.message}\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (positionals.length !== 1 || !positionals[0].trim()) {
    fail(`expected exactly one prompt or image path\n${USAGE}`);
  }
  if (!STACKS.includes(values.stack)) {
    fail(`unknown stack ${JSON.stringify(values.stack)}; one of: ${STACKS.join(', ')}`);
  }
  if (!/^\d+$/.test(values.variants)) {
    fail(`--variants must be a whole number, got ${JSON.stringify(values.variants)}`);
  }
  return { ...values, input: positionals[0], variants: Number(values.variants) };
}

// The request: an image when the argument names an image file, a text prompt otherwise.
function buildRequest(options) {
  const request = {
    generation_type: 'GENERATION_TYPE_CREATE',
    stack: `STACK_${options.stack.toUpperCase()}`,
    variant_count: options.variants,
    models: options.model,
    prompt: { text: '', images: [] },
  };
  const input = options.input;
  const mime = IMAGE_TYPES[extname(input).toLowerCase()];
  if (existsSync(input) && statSync(input).isFile()) {
    if (!mime) fail(`${input} is not a png, jpeg, webp or gif image`);
    const data = readFileSync(input).toString('base64');
    request.input_mode = 'INPUT_MODE_IMAGE';
    request.prompt.images.push(`data:${mime};base64,${data}`);
  } else if (mime) {
    fail(`no such image file: ${input}`);
  } else {
    request.input_mode = 'INPUT_MODE_TEXT';
    request.prompt.text = input;
  }
  return request;
}

function loadAgentService() {
  const definition = protoLoader.loadSync(join(PROTOS, 's2c/agent/v1/agent_service.proto'), {
    // google/protobuf/{struct,timestamp}.proto come from the copies proto-loader bundles.
    includeDirs: [PROTOS],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).s2c.agent.v1.AgentService;
}

// google.protobuf.Struct / Value as decoded by proto-loader → plain JSON.
function fromValue(value) {
  switch (value?.kind) {
    case 'nullValue':
      return null;
    case 'numberValue':
    case 'stringValue':
    case 'boolValue':
      return value[value.kind];
    case 'structValue':
      return fromStruct(value.structValue);
    case 'listValue':
      return (value.listValue.values ?? []).map(fromValue);
    default:
      return null;
  }
}

function fromStruct(struct) {
  return Object.fromEntries(
    Object.entries(struct?.fields ?? {}).map(([key, value]) => [key, fromValue(value)]),
  );
}

function shorten(line, max = 100) {
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

// Texts print quoted (JSON), so newlines in them stay on one line.
const quote = (text) => shorten(JSON.stringify(text));

function describe(event) {
  const body = event[event.payload];
  switch (event.payload) {
    case 'variant_count':
      return `${body.count} variant(s): ${body.models.join(', ')}`;
    case 'status':
    case 'assistant_delta':
    case 'thinking_delta':
      return quote(body.text);
    case 'tool_start':
      return `${body.name} ${shorten(JSON.stringify(fromStruct(body.input)))}`;
    case 'tool_result':
      return `${body.name} ${body.ok ? 'ok' : 'failed'}`;
    case 'code_delta':
      return `offset ${body.offset} +${[...body.text].length} chars`;
    case 'code_snapshot':
      return `${body.path} (${[...body.content].length} chars)`;
    case 'usage':
      return `this turn: in ${body.input_tokens} out ${body.output_tokens} tokens, $${body.cost_usd}`;
    case 'variant_complete':
      return 'done';
    case 'variant_error':
    case 'generation_error':
      return body.message;
    case 'generation_complete':
      return body.status;
    default:
      return '';
  }
}

// Plaintext by default; TLS (verified against S2C_GRPC_TLS_CA) when that is set.
function channelCredentials(channelOptions) {
  const ca = process.env.S2C_GRPC_TLS_CA;
  if (!ca) return grpc.credentials.createInsecure();
  let rootCerts;
  try {
    rootCerts = readFileSync(ca);
  } catch (error) {
    fail(`cannot read S2C_GRPC_TLS_CA ${ca}: ${error.message}`);
  }
  const serverName = process.env.S2C_GRPC_TLS_SERVER_NAME;
  if (serverName) channelOptions['grpc.ssl_target_name_override'] = serverName;
  return grpc.credentials.createSsl(rootCerts);
}

function main() {
  const options = parseCommandLine();
  const request = buildRequest(options);
  const address = process.env.S2C_AGENT_ADDR || '127.0.0.1:50051';
  const AgentService = loadAgentService();
  const channelOptions = {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.max_send_message_length': 64 * 1024 * 1024,
  };
  const credentials = channelCredentials(channelOptions);
  const client = new AgentService(address, credentials, channelOptions);
  const metadata = new grpc.Metadata();
  if (process.env.S2C_GRPC_TOKEN) {
    metadata.set('authorization', `Bearer ${process.env.S2C_GRPC_TOKEN}`);
  }

  // Each variant's code as an array of code points: code_delta offsets count code points.
  const code = new Map();
  const failed = new Set();
  const written = [];
  let finalStatus = null;
  let interrupted = false;

  const call = client.GenerateCode(request, metadata);
  process.once('SIGINT', () => {
    interrupted = true;
    call.cancel(); // the agent cancels the generation when its stream goes away
  });

  // Each message carries the events committed since the previous one, in order.
  call.on('data', (message) => message.events.forEach(onEvent));

  function onEvent(event) {
    // `optional`: unset (null here) for generation-wide events; 0 is the first variant.
    const v = event.variant_index ?? null;
    const scope = v === null ? 'generation' : `variant ${v + 1}`;
    process.stdout.write(`#${event.sequence} [${scope}] ${event.payload} ${describe(event)}\n`);
    const body = event[event.payload];
    switch (event.payload) {
      case 'code_delta': {
        const points = code.get(v) ?? [];
        points.length = Math.min(points.length, Number(body.offset));
        for (const ch of body.text) points.push(ch);
        code.set(v, points);
        break;
      }
      case 'code_snapshot':
        code.set(v, [...body.content]);
        break;
      case 'variant_complete': {
        mkdirSync(options.out, { recursive: true });
        const target = join(options.out, `variant-${v + 1}.html`);
        writeFileSync(target, (code.get(v) ?? []).join(''));
        written.push(target);
        break;
      }
      case 'variant_error':
        failed.add(v);
        break;
      case 'generation_complete':
        finalStatus = body.status;
        break;
      default:
        break;
    }
  }

  const reportWritten = () => {
    for (const target of written) process.stdout.write(`wrote ${target}\n`);
  };

  let errored = false;
  call.on('error', (error) => {
    errored = true;
    reportWritten();
    if (interrupted) {
      process.stderr.write('generate.mjs: cancelled\n');
      process.exitCode = 130;
    } else {
      process.stderr.write(
        `generate.mjs: ${grpc.status[error.code] ?? error.code} from ${address}: ${error.details}\n`,
      );
      process.exitCode = 2;
    }
    client.close();
  });

  call.on('end', () => {
    if (errored) return; // grpc-js ends the stream after an error too
    reportWritten();
    client.close();
    if (finalStatus === null) {
      process.stderr.write('generate.mjs: the stream ended before generation_complete\n');
      process.exitCode = 2;
    } else if (finalStatus !== 'RUN_STATUS_COMPLETED' || failed.size > 0) {
      process.stderr.write(
        `generate.mjs: generation ${finalStatus}; ${failed.size} variant(s) failed\n`,
      );
      process.exitCode = 1;
    } else {
      process.exitCode = 0;
    }
  });
}

main();
