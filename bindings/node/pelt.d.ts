// Types of pelt's Node.js API (pelt.js). The result types follow docs/result-schema.json,
// the schema of the CLI's --json document, which run() resolves to.

import { EventEmitter } from 'node:events'

/** A duration: seconds as a number, or text such as '500ms', '10s', '2m'. */
export type Duration = number | string
/** A count: a number, or text such as '10k', '1m'. */
export type Count = number | string

/** One stage of `stages`: move linearly to `target` over `duration`. */
export interface Stage {
  duration: Duration
  target: number | string
}

/** One target of `targets` given in JavaScript (the JSON-lines format's fields). */
export interface Target {
  url: string
  method?: string
  headers?: Record<string, string | string[]> | string[]
  body?: string
  body_base64?: string
  name?: string
}

/** run()'s options: the CLI's long flags in camelCase (see `pelt --help`). */
export interface RunOptions {
  /** The target URL (optional with `targets`). */
  url?: string
  /** -c: concurrent connections (default 50). */
  connections?: Count
  /** -d: run this long (default 10s without `requests`). */
  duration?: Duration
  /** -n: send exactly this many requests. */
  requests?: Count
  /** -t: worker threads (default: the CPUs pelt may use). */
  threads?: Count
  method?: string
  /** -H: `{Name: value}` or `['Name: value', ...]`. */
  headers?: Record<string, string | number> | string[] | string
  body?: string
  /** A body that is not text, base64-encoded. */
  bodyBase64?: string
  bodyFile?: string
  /** --targets: a file (vegeta's http format or JSON lines), or the targets themselves. */
  targets?: string | Target[]
  targetsFormat?: 'auto' | 'http' | 'json'
  bodies?: string
  order?: 'sequential' | 'random'
  seed?: number | string
  unixSocket?: string
  /** false: a new connection per request (--no-keepalive). */
  keepAlive?: boolean
  timeout?: Duration
  connectTimeout?: Duration
  /** Open loop: requests per second (with `stages`, the start; 0 allowed). */
  rate?: number | string
  /** '30s:1k,1m:10k,30s:0' or a list of stages. */
  stages?: string | Stage[]
  arrival?: 'constant' | 'poisson'
  maxConnections?: Count
  /** Open loop: requests due within one window start together (default '100us'; 0: none). */
  batchWindow?: Duration
  pipeline?: Count
  http2?: boolean
  streams?: Count
  connectRate?: number | string
  cacert?: string
  insecure?: boolean
  tlsFullHandshake?: boolean
  tlsVersion?: '1.2' | '1.3'
  sni?: string
  cert?: string
  key?: string
  io?: 'auto' | 'uring' | 'epoll'
  warmup?: Duration
  grace?: Duration
  /** --expect: thresholds such as 'p99<20ms', 'errors<0.1%'. */
  expect?: string | string[]
}

/** Latency figures, microseconds. */
export interface Latency {
  min: number
  mean: number
  stdev: number
  p50: number
  p90: number
  p99: number
  p99_9: number
  p99_99: number
  max: number
}

export interface Requests {
  sent: number
  completed: number
  errors: number
  in_flight: number
}

/** One second of the run: the JSON result's `timeline`, and each 'tick'. */
export interface TimelinePoint {
  second: number
  length_s: number
  warmup: boolean
  sent: number
  completed: number
  errors: number
  rps: number
  status_classes: Record<string, number>
  latency_us: { p50: number; p90: number; p99: number; max: number }
  histogram?: string | null
  connections: number
  /** With `stages`: the rate (requests/s) or connections they asked for in this second. */
  target?: number
}

export interface TargetResult {
  name: string
  sent: number
  completed: number
  errors: number
  in_flight: number
  status: Record<string, number>
  error_kinds: Record<string, number>
  latency_us: Latency
  histogram: string
}

/** The result: the CLI's --json document (docs/result-schema.json). */
export interface Result {
  pelt_version: string
  target: string
  method: string
  connections: number
  threads: number
  keep_alive: boolean
  io: 'io_uring' | 'epoll'
  pipeline: number
  http: '1.1' | '2'
  streams: number | null
  connect_rate: number | null
  tls: { insecure: boolean; resumption: boolean; cacert: string | null; version: string | null; sni: string | null } | null
  tls_handshakes: { full: number; resumed: number; time_us: Latency } | null
  load_model: 'closed' | 'open'
  rate: number | null
  arrival: 'constant' | 'poisson' | null
  max_connections: number | null
  warmup_s: number
  grace_s: number
  duration_limit_s: number | null
  requests_limit: number | null
  timeout_s: number
  request_set: { from: string; file: string | null; entries: number; order: string; seed: number | null; encoded_bytes: number } | null
  unix_socket: string | null
  stages: { of: 'rate' | 'connections'; start: number; stages: { duration_s: number; target: number }[] } | null
  targets: TargetResult[]
  duration_s: number
  stopped_by: 'requests' | 'duration' | 'signal'
  interrupted: boolean
  requests: Requests
  rps: number
  status: Record<string, number>
  errors: Record<string, number>
  error_examples: Record<string, string>
  error_hints: Record<string, string>
  connection_errors: Record<string, number>
  latency_us: Latency
  latency_from: 'send' | 'due'
  open_loop: { service_time_us: Latency; lag_us: Latency; late_requests: number; late_threshold_us: number; backlog_at_end: number } | null
  warmup: { duration_s: number; requests: Requests; status: Record<string, number>; errors: Record<string, number>; latency_us: Latency } | null
  bytes: { sent: number; received: number }
  throughput_bytes_per_s: number
  connections_opened: number
  timeline: TimelinePoint[]
  thresholds: { expect: string; actual: number | null; unit: string; passed: boolean }[]
  notes: string[]
  started_unix_ms: number
  histograms: { latency_us: string; service_time_us: string | null; lag_us: string | null; handshake_us: string | null; warmup_latency_us: string | null }
  merged_from: string[]
  /** A fleet run (pelt URL --agents N): each agent's part; null for one process. */
  fleet: {
    agents: {
      rank: number; host: string; address: string; threads: number; first_worker: number
      clock_offset_ms: number; rtt_ms: number; start_skew_ms: number | null
      state: 'finished' | 'lost'; problem: string | null
      requests: Requests; rps: number; latency_us: Latency | null
    }[]
    start_spread_ms: number | null
    start_skew_max_ms: number | null
    lost: string[]
  } | null
}

/** A run under way: awaitable (resolves to the result), with a 'tick' each second. */
export declare class Run extends EventEmitter implements PromiseLike<Result> {
  then<A = Result, B = never>(
    onResult?: ((r: Result) => A | PromiseLike<A>) | null,
    onError?: ((e: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B>
  catch<B = never>(onError?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<Result | B>
  finally(onEnd?: (() => void) | null): Promise<Result>
  /** Stops sending (as Ctrl-C); resolves to the result, marked interrupted. */
  stop(): Promise<Result>
  on(event: 'tick', listener: (point: TimelinePoint) => void): this
  once(event: 'tick', listener: (point: TimelinePoint) => void): this
}

/** Starts a load test. Throws TypeError or RangeError (the CLI's message) on a bad option. */
export declare function run(options: RunOptions): Run
/** Checks options as run() would, sending nothing. */
export declare function check(options: RunOptions): void

/** `pelt serve`'s options in camelCase; port 0 (the default) lets the system pick one. */
export interface ServerOptions {
  port?: number
  host?: string
  threads?: Count
  /** Wait this long before each response (a number: seconds). */
  delay?: Duration
  work?: Duration
  bodySize?: Count
  status?: number
  /** Share of responses answered 500: 0.05 or '5%'. */
  errorRate?: number | string
  close?: boolean
  chunked?: boolean
  h2?: boolean
  tls?: boolean
  unixSocket?: string
  maxRequests?: Count
}

export interface Server {
  url: string
  port: number
  /** Requests served so far; after close(), in all. */
  readonly served: number
  /** Stops serving; resolves to the requests served. */
  close(): Promise<number>
}

export declare function startServer(options?: ServerOptions): Promise<Server>

/** loadtest 8's options (see the README for where pelt differs). */
export interface LoadtestOptions {
  url: string
  maxRequests?: number
  maxSeconds?: number
  concurrency?: number
  requestsPerSecond?: number
  method?: string
  body?: string | object
  contentType?: string
  headers?: Record<string, string | number>
  cookies?: string[]
  indexParam?: string
  indexParamLiteral?: string
  insecure?: boolean
  agentKeepAlive?: boolean
  /** Milliseconds; 0 (the default): none. */
  timeout?: number
  quiet?: boolean
}

/** loadtest 8's result fields. */
export declare class LoadtestResult {
  url: string
  maxRequests?: number
  maxSeconds: number
  concurrency: number
  agent: 'keepalive' | 'none'
  requestsPerSecond?: number
  clients: number
  totalRequests: number
  totalErrors: number
  elapsedSeconds: number
  totalTimeSeconds: number
  effectiveRps: number
  rps: number
  meanLatencyMs: number
  maxLatencyMs: number
  percentiles: { 50: number; 90: number; 95: number; 99: number }
  errorCodes: Record<string, number>
  /** pelt's own result. */
  readonly pelt: Result
  show(): void
}

export declare function loadTest(options: LoadtestOptions): Promise<LoadtestResult>
export declare function loadTest(
  options: LoadtestOptions,
  callback: (error: Error | null, result?: LoadtestResult) => void,
): void
