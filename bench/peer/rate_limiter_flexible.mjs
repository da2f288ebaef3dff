// The peer in bench/compare: rate-limiter-flexible's RateLimiterRedis (fixed window: `points` per
// `duration` seconds, one Lua script per consume, sent with EVALSHA by ioredis) loaded by N
// concurrent callers in ONE Node.js process: each caller is an async loop awaiting consume() of a
// random key, so N callers keep N requests in flight over one ioredis connection — the way one
// Node.js service instance uses the library. Prints one JSON line.
//
// Usage: node rate_limiter_flexible.mjs --modules DIR --port P --callers N --duration-ms D
//          [--warmup-ms W] [--keys K] [--limit L] [--window-s S] [--key-prefix user:]
//          [--auto-pipelining] [--seed N]
// DIR holds node_modules with rate-limiter-flexible and ioredis (a scratch folder: never shipped).
import { createRequire } from 'node:module';
import path from 'node:path';

function parseArgs(argv) {
  const options = {
    modules: '', port: 6379, callers: 1, durationMs: 5000, warmupMs: 0, keys: 10000, limit: 100,
    windowS: 1, keyPrefix: 'user:', autoPipelining: false, seed: 1,
  };
  for (let i = 2; i < argv.length; ++i) {
    const flag = argv[i];
    const next = () => argv[++i];
    switch (flag) {
      case '--modules': options.modules = next(); break;
      case '--port': options.port = Number(next()); break;
      case '--callers': options.callers = Number(next()); break;
      case '--duration-ms': options.durationMs = Number(next()); break;
      case '--warmup-ms': options.warmupMs = Number(next()); break;
      case '--keys': options.keys = Number(next()); break;
      case '--limit': options.limit = Number(next()); break;
      case '--window-s': options.windowS = Number(next()); break;
      case '--key-prefix': options.keyPrefix = next(); break;
      case '--auto-pipelining': options.autoPipelining = true; break;
      case '--seed': options.seed = Number(next()); break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  if (!options.modules) throw new Error('--modules DIR is required');
  return options;
}

// mulberry32: a small seeded generator, so every run draws the same keys.
function random32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Nearest-rank percentile of sorted values, as sluice bench's histogram defines it.
function percentile(sorted, q) {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

async function main() {
  const options = parseArgs(process.argv);
  const require = createRequire(path.join(path.resolve(options.modules), 'package.json'));
  const Redis = require('ioredis');
  const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
  const versions = {
    'rate-limiter-flexible': require('rate-limiter-flexible/package.json').version,
    ioredis: require('ioredis/package.json').version,
    node: process.versions.node,
  };

  const redis = new Redis({
    host: '127.0.0.1', port: options.port, enableAutoPipelining: options.autoPipelining,
    maxRetriesPerRequest: 1,
  });
  await redis.ping();
  const limiter = new RateLimiterRedis({
    storeClient: redis, points: options.limit, duration: options.windowS, keyPrefix: 'rlflx',
  });
  // Loads the script (EVALSHA falls back to EVAL once) before anything is measured.
  await limiter.consume('rlflx-bench-prime', 0).catch(() => {});

  const now = () => Number(process.hrtime.bigint());  // ns
  const start = now();
  const measureFrom = start + options.warmupMs * 1e6;
  const end = measureFrom + options.durationMs * 1e6;
  const latencies = [];
  let allowed = 0, denied = 0, errors = 0, lastReply = measureFrom, firstError = '';

  async function caller(index) {
    const draw = random32(options.seed * 1000003 + index);
    for (;;) {
      const key = options.keyPrefix + Math.floor(draw() * options.keys);
      const sent = now();
      if (sent >= end) return;
      let verdict;
      try {
        await limiter.consume(key, 1);
        verdict = 'allowed';
      } catch (error) {
        if (error instanceof RateLimiterRes) {
          verdict = 'denied';
        } else {
          verdict = 'error';
          if (!firstError) firstError = String(error && error.message ? error.message : error);
        }
      }
      const reply = now();
      if (sent < measureFrom) continue;
      latencies.push(reply - sent);
      if (verdict === 'allowed') ++allowed; else if (verdict === 'denied') ++denied; else ++errors;
      if (reply > lastReply) lastReply = reply;
    }
  }

  const callers = [];
  for (let i = 0; i < options.callers; ++i) callers.push(caller(i));
  await Promise.all(callers);
  await redis.quit();

  latencies.sort((a, b) => a - b);
  const seconds = (Math.max(lastReply, end) - measureFrom) / 1e9;
  const us = (ns) => ns / 1e3;
  const result = {
    tool: 'rate-limiter-flexible',
    versions,
    auto_pipelining: options.autoPipelining,
    callers: options.callers,
    seconds,
    decisions: latencies.length,
    decisions_per_second: latencies.length / seconds,
    allowed, denied, errors,
    latency_us: {
      min: us(latencies[0] ?? 0),
      p50: us(percentile(latencies, 0.5)),
      p90: us(percentile(latencies, 0.9)),
      p99: us(percentile(latencies, 0.99)),
      p99_9: us(percentile(latencies, 0.999)),
      max: us(latencies[latencies.length - 1] ?? 0),
    },
  };
  if (firstError) result.first_error = firstError;
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((error) => {
  process.stderr.write(`rate_limiter_flexible.mjs: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
