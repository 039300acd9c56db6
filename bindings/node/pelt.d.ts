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
  /** With `replay`: when it was recorded (milliseconds from the start, or an RFC 3339 time). */
  t?: number | string
  /** How long the recorded request took, ms: shown beside the replayed latency. */
  recorded_ms?: number
}

/** run()'s options: the CLI's long flags in camelCase (see `pelt --help`). */
// BEGIN RunOptions: generated from pelt_load::options::RUN (PELT_BLESS=1 cargo test -p pelt-load options)
export interface RunOptions {
  /**
   * Target URL, e.g. http://127.0.0.1:8080/path (optional with --targets).
   */
  url?: string
  /**
   * -c, --connections: Concurrent connections (spread over the threads). [default: 50]
   */
  connections?: Count
  /**
   * -d, --duration: Run for this long: 500ms, 10s, 2m [default: 10s unless -n is given].
   */
  duration?: Duration
  /**
   * -n, --requests: Send exactly this many requests: 1000, 10k, 1m. With -d, stop at whichever
   * comes first.
   */
  requests?: Count
  /**
   * -t, --threads: Worker threads [default: the CPUs pelt may run on].
   */
  threads?: Count
  /**
   * -m, --method: Request method. [default: GET]
   */
  method?: string
  /**
   * -H, --header: Add a request header, 'Name: value' (repeatable).
   */
  headers?: Record<string, string | number> | string[] | string
  /**
   * -b, --body: Request body (Content-Length added).
   */
  body?: string
  /**
   * --body-file: Read the request body from a file.
   */
  bodyFile?: string
  /**
   * A request body that is not text, base64-encoded.
   */
  bodyBase64?: string
  /**
   * --targets: Send many requests: targets from FILE (- for standard input), in vegeta's http
   * format (METHOD URL, header lines, @body-file; blank lines between) or JSON lines ({"method",
   * "url", "headers", "body" or "body_base64", "name", "t" for --replay}), or an access log or
   * HAR file (--targets-format). All on one origin; the URL argument is then optional. -H, -m
   * and --body apply to every target. Node.js also takes the targets themselves, as a list.
   */
  targets?: string | Target[]
  /**
   * --targets-read: Read the --targets file as the run goes (stream: memory bounded by a
   * look-ahead of 262,144 requests, whatever its length; after a first pass that checks every
   * line), or whole before it. Replayed or not; plain targets loop, and -n sends the file's
   * first n.
   */
  targetsRead?: 'auto' | 'stream' | 'whole'
  /**
   * --targets-format: The format of --targets. [default: auto]
   */
  targetsFormat?: 'auto' | 'http' | 'json' | 'nginx' | 'apache' | 'har'
  /**
   * --replay: Replay a recording: send each target at its recorded time ("t" in JSON-lines
   * targets: milliseconds from the start, or an RFC 3339 time), in time order, latency from that
   * time (open loop). Ends after the last one unless -n, -d or --replay-loop.
   */
  replay?: boolean
  /**
   * --replay-speed: With --replay: play the recording this many times as fast (2x, 0.5x; 1x
   * unless told).
   */
  replaySpeed?: number | string
  /**
   * --replay-loop: With --replay: start the recording again at its end (a mean gap later), until
   * -n or -d (10s unless told) ends the run.
   */
  replayLoop?: boolean
  /**
   * --skip-bad-lines: With --targets (JSON lines, an access log or a HAR file): count and skip
   * the lines (HAR entries) that do not parse, instead of refusing the run; the result says how
   * many, and the first one.
   */
  skipBadLines?: boolean
  /**
   * --log-format: With --targets-format nginx or apache: the log's line layout in nginx's
   * log_format syntax ($msec, $time_iso8601 or $time_local for the time; $request, or
   * $request_method and $request_uri); the combined format unless told.
   */
  logFormat?: string
  /**
   * --bodies: Send many bodies: one per line of FILE (- for standard input), each a request to
   * the URL with -m and -H, in turn.
   */
  bodies?: string
  /**
   * --scenario: Run user journeys from a scenario file (YAML or JSON; docs/SCENARIOS.md): each
   * connection is a virtual user with its own variables and cookie jar, running the file's once
   * steps, then its flow again and again; per-step figures, checks and iterations in the report.
   * Closed loop: -c users; open loop: --rate iterations per second, each given to an idle user
   * (up to --max-users). Over --http2 each connection seats --streams users, one stream each.
   * The URL argument (or the file's config.target) gives the origin.
   */
  scenario?: string | Record<string, unknown>
  /**
   * --prompts: An LLM serving benchmark: each request a streamed OpenAI-style POST of a prompt
   * from FILE (JSON lines with prompt, text or messages, and optionally max_tokens; or a
   * ShareGPT JSON array), a chat completion to a URL ending in /chat/completions, a text
   * completion otherwise, asking for usage at its end; in --order. Streams end at [DONE] unless
   * --stream-end says.
   */
  prompts?: string
  /**
   * --input-tokens: Made prompts of N words (a word a token; a model's tokenizer counts its
   * own), N-SPREAD to N+SPREAD uniformly from --seed, up to 1,000 of them, sent as --prompts'
   * are.
   */
  inputTokens?: number | string
  /**
   * --output-tokens: With --prompts or --input-tokens: ask each request for N tokens
   * (max_tokens), N-SPREAD to N+SPREAD uniformly from --seed; a --prompts line that says its own
   * keeps it.
   */
  outputTokens?: number | string
  /**
   * --model: With --prompts or --input-tokens: the requests' model field (absent: the server's
   * own).
   */
  model?: string
  /**
   * -s, --script: Run a wrk Lua script (wrk's scripting API: the wrk table, wrk.format,
   * wrk.lookup, wrk.connect, setup(thread), init(args), done(summary, latency, requests)); its
   * arguments follow --. The request it leaves in the wrk table is the run's (with --targets, it
   * sets what -m, -H and --body would); request() may read the request the run would send
   * (pelt.next()); done() gets the figures of every thread.
   */
  script?: string | { file: string; text: string }
  /**
   * -- ARGS...: The script's arguments (init(args)), after -- as wrk takes them.
   */
  scriptArgs?: string[]
  /**
   * --order: With --targets or --bodies: the order requests take their entries. [default:
   * sequential]
   */
  order?: 'sequential' | 'random'
  /**
   * --seed: Seed for random choices (--order random); without it one is chosen and reported.
   */
  seed?: number | string
  /**
   * --unix-socket: Connect to this Unix socket instead of the URL's host and port (curl's flag);
   * the URL still gives the Host header and the path. HTTP/1.1 and h2c.
   */
  unixSocket?: string
  /**
   * --no-keepalive: Open a new connection for every request (sends Connection: close);
   * keepAlive: false in Node.js.
   */
  keepAlive?: boolean
  /**
   * --timeout: Whole-request timeout, from the first byte written to the last byte read; a
   * stream (server-sent events) times out when it sends nothing for this long. [default: 10s]
   */
  timeout?: Duration
  /**
   * --connect-timeout: Connect timeout. [default: 5s]
   */
  connectTimeout?: Duration
  /**
   * --stream: Read every response's body as a stream of events, whatever its Content-Type: one
   * event per line (JSON lines, as Ollama streams); text/event-stream responses are always read
   * as server-sent events. Each event is timed: time to first event, the gaps between events,
   * events/s (tokens, for an LLM).
   */
  stream?: boolean
  /**
   * --stream-limit: End each stream after this many events (100), this long after its request
   * (30s), or at whichever comes first (100,30s): pelt closes it (HTTP/2: resets the stream;
   * HTTP/1.1: closes the connection) and counts it as cut, not as an error. Every stream has a
   * time limit. [default: 600s]
   */
  streamLimit?: number | string
  /**
   * --stream-end: An event whose data is exactly this ends its stream normally, and is not
   * counted as an event ('[DONE]', as OpenAI-style servers send).
   */
  streamEnd?: string
  /**
   * --goodput: Goodput: latency targets every good request meets, ttft<500ms, tpot<50ms (or
   * itl<50ms) and e2e<10s (comma-separated, or repeated). Each stream is judged at its end; the
   * result counts the requests that met every target, their share of the requests that ended and
   * their rate (--expect goodput>99%; pelt find-max --slo goodput>99%). Needs streams read:
   * --stream, --stream-end or --prompts.
   */
  goodput?: string | string[]
  /**
   * --ws-protocol: ws://: ask for these subprotocols (Sec-WebSocket-Protocol, comma-separated);
   * a server that picks one not asked for fails the upgrade.
   */
  wsProtocol?: string
  /**
   * --ws-ping: ws://: ping each upgraded socket this often (pongs are counted).
   */
  wsPing?: Duration
  /**
   * --ws-binary: ws://: send messages as binary frames (text unless told).
   */
  wsBinary?: boolean
  /**
   * --ws-no-reply: ws://: messages expect no reply (a server that pushes instead of echoing):
   * each is done when written, its latency the time to write it, and every message received
   * counts as pushed; wsExpectReply: false in Node.js. Without it each message awaits the next
   * message the socket receives (replies in order).
   */
  wsExpectReply?: boolean
  /**
   * --ws-max-message: ws://: the longest message the server may send; a longer one fails the
   * socket (ws_too_big). [default: 64 MiB]
   */
  wsMaxMessage?: number | string
  /**
   * --proto: grpc://: the service's .proto file (compiled by pelt, no protoc needed); the URL's
   * path names the method, grpc://HOST:PORT/package.Service/Method.
   */
  proto?: string
  /**
   * --protoset: grpc://: the service's compiled descriptors, a FileDescriptorSet (protoc
   * --descriptor_set_out --include_imports, buf build -o), as ghz and grpcurl take.
   */
  protoset?: string
  /**
   * --reflect: grpc://: take the service's descriptors from the server's reflection service
   * (grpc.reflection.v1, or v1alpha), asked once before the run, instead of --proto.
   */
  reflect?: boolean
  /**
   * --grpc-send-all: grpc:// bidirectional methods: send every message of the call at once, then
   * half-close (as ghz does); by default each message goes once the one before is answered, so
   * each gap between replies is a message's round trip.
   */
  grpcSendAll?: boolean
  /**
   * -I, --import-path: grpc://: a folder --proto's imports are found in, as protoc's -I
   * (repeatable; the proto's own folder is always one).
   */
  importPaths?: string[] | string
  /**
   * -R, --rate: Open loop: send requests on a fixed schedule at this rate (per second: 500, 20k,
   * 0.5), whatever the server does; latency counts from each request's due time. With --stages,
   * the rate they start from (0 allowed).
   */
  rate?: number | string
  /**
   * --stages: Ramp the load in stages, as k6 does: each DURATION:TARGET moves linearly from the
   * previous target to its own (30s:1k,1m:10k,30s:0; 0s:N jumps). With --rate, the arrival rate
   * (starting at --rate); without, the active connections (starting at 0; -c does not apply). -d
   * defaults to the stages' total.
   */
  stages?: string | Stage[]
  /**
   * --arrival: Open loop: how requests are spaced.
   */
  arrival?: 'constant' | 'poisson'
  /**
   * --max-connections: Open loop: open up to N connections when a request is due and none is
   * free [default: -c; with --prompts or --input-tokens 1,000, as an LLM benchmark's streams
   * each hold one]. With --scenario, each user is a connection: an iteration that finds no idle
   * user makes one, up to N.
   */
  maxConnections?: Count
  /**
   * --batch-window: Open loop: requests due within one window of this length start together at
   * its end, and responses are read then, at the times the kernel stamped on them: one wake-up
   * for many, so less CPU; the lag shows each request's wait. 0: each at its own due time; at
   * most 10ms. [default: 100us]
   */
  batchWindow?: Duration
  /**
   * --pipeline: HTTP/1.1 pipelining: each connection writes D requests together, and the next D
   * once all are answered (as wrk's pipeline script). [default: 1]
   */
  pipeline?: Count
  /**
   * --http2: HTTP/2: ALPN h2 on https://, prior knowledge (h2c) on http://.
   */
  http2?: boolean
  /**
   * --http3: HTTP/3 over QUIC (UDP) to an https:// URL: TLS 1.3 with ALPN h3, QPACK's static
   * table.
   */
  http3?: boolean
  /**
   * --streams: HTTP/2 (--http2, grpc://) and HTTP/3 (--http3): concurrent streams per connection
   * (the server's limit lowers it) [default: 1; with --rate, 100].
   */
  streams?: Count
  /**
   * --connect-rate: Open at most N new connections per second at the start (1000, 5k) [default:
   * all at once, spread over the threads].
   */
  connectRate?: number | string
  /**
   * --cacert: https: also trust the CA or self-signed certificates in this PEM file.
   */
  cacert?: string
  /**
   * -k, --insecure: https: do NOT verify the server's certificate (the report says so).
   */
  insecure?: boolean
  /**
   * --tls-full-handshake: https: no session resumption, every connection pays a full handshake.
   */
  tlsFullHandshake?: boolean
  /**
   * --tls-early-data: https over HTTP/3: requests go in 0-RTT on resumed connections where the
   * server allows it (a refused one goes again after the handshake, counted once). Only for
   * requests safe to repeat: a 0-RTT request can be replayed.
   */
  tlsEarlyData?: boolean
  /**
   * --tls-version: https: only this TLS version [default: 1.2 or 1.3, as negotiated].
   */
  tlsVersion?: '1.2' | '1.3'
  /**
   * --sni: https: send and verify this name (SNI) instead of the URL's host.
   */
  sni?: string
  /**
   * --cert: https: present this PEM client certificate chain (needs --key).
   */
  cert?: string
  /**
   * --key: https: the PEM private key of --cert.
   */
  key?: string
  /**
   * --io: I/O backend. [default: auto]
   */
  io?: 'auto' | 'uring' | 'epoll'
  /**
   * --warmup: Send for this long first without measuring (its counts are reported apart); -d and
   * -n count after it.
   */
  warmup?: Duration
  /**
   * --grace: After Ctrl-C or SIGTERM (Node.js: stop()), wait this long for requests in flight
   * before reporting. [default: 1s]
   */
  grace?: Duration
  /**
   * --expect: Fail the run (exit 3) unless this holds: p99<20ms, errors<0.1%, rps>5000, 5xx<1%
   * (repeatable); with --scenario also step[NAME].p99<50ms, checks>99.9%,
   * iterations_failed<0.1%.
   */
  expect?: string | string[]
  /**
   * --monitor: Sample the server's processes on this machine each second: a process ID, a name
   * (every process of that name), or listener (whatever listens on the target's port: each
   * target its own in pelt compare); children included. Their CPU (and CPU-us per request),
   * memory, threads and file descriptors, the host's CPU and network and pelt's own CPU join the
   * timeline, and the summary says what limited the run.
   */
  monitor?: string | number
  /**
   * --monitor-remote: Take the server's resources from a pelt monitor on its machine (pelt
   * monitor PID|NAME there), over the fleet's channel and token (--token-file or
   * PELT_FLEET_TOKEN): the server's processes and that machine's CPU and network each second
   * beside the load. A monitor that goes silent is named; the run goes on.
   */
  monitorRemote?: string
  /**
   * Keep every N-th request that ends, per thread, for the 'samples' event (at most 4,096 per
   * thread and second; the rest counted in samples_dropped).
   */
  sampleEvery?: Count
  /**
   * Sampled requests (sampleEvery) carry their responses as they came, head and body (HTTP/1.1;
   * at most 64 KiB each): the sample's `response`.
   */
  sampleResponses?: boolean
}
// END RunOptions

/** An `expect` (or `slo`) threshold and whether it held. */
export interface Threshold {
  expect: string
  actual: number | null
  unit: string
  passed: boolean
}

/** Latency figures, microseconds. */
/** A script's own figures (the result's `script`). */
export interface Script {
  /** The script, as given. */
  file: string
  /** Each `pelt.counter(name)`'s total. */
  counters: Record<string, number>
  /** Each `pelt.histogram(name)`: its values' count and figures, in the script's own unit,
   * and the HDR histogram (base64) they come from. */
  histograms: Record<string, ScriptHistogram>
}

/** One of a script's histograms: its values' count and figures (as `Latency`'s), in the
 * script's own unit. */
export interface ScriptHistogram extends Latency {
  count: number
  /** The HDR histogram the figures come from (base64), what `pelt merge` adds. */
  histogram: string
}

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

/** A run's streamed responses (the result's `event_streams`). */
export interface EventStreams {
  /** Streams that ended: by the server, at `streamEnd`, or cut at `streamLimit`. */
  streams: number
  events: number
  bytes: number
  /** Streams pelt ended at `streamLimit` (responses, not errors). */
  cut: number
  ended_by_marker: number
  without_events: number
  /** Events per second of the run (tokens/s overall). */
  events_per_s: number
  /** Time to first event (TTFT), from where latency starts. */
  ttft_us: Latency
  /** The gap before each event after a stream's first (inter-token latency). */
  gap_us: Latency
  /** Per stream: its time per event after the first (TPOT). */
  time_per_event_us: Latency
  duration_us: Latency
  /** Per stream: its events (counts). */
  events_per_stream: Latency
  histograms: { ttft_us: string; gap_us: string; time_per_event_us: string; duration_us: string; events_per_stream: string }
  /** The tokens the server counted (OpenAI's `usage` in an event), where it reported them. */
  tokens?: Tokens
  /** Goodput (`goodput`): the requests that met every latency target. */
  goodput?: Goodput
}

/** The result's `event_streams.goodput`: requests that met every `slo` target. */
export interface Goodput {
  /** The targets as given (`ttft<500ms`). */
  targets: string[]
  /** Requests that met every target, and the requests judged (every one that ended). */
  met: number
  requests: number
  /** `met` as a percentage of `requests`. */
  share: number
  /** `met` per second of the run. */
  per_s: number
}

/** A stream's server-reported tokens (the result's `event_streams.tokens`). */
export interface Tokens {
  /** Streams whose server reported their token counts. */
  streams: number
  /** Input (prompt) and output (completion) tokens of those streams. */
  input: number
  output: number
  /** Output tokens per second of the run. */
  output_per_s: number
  /** Time per output token (TPOT): per stream, (its end - its first event) / (output tokens - 1). */
  tpot_us: Latency
  tpot_histogram: string
}

/** A WebSocket run's figures beyond its messages (the result's `websocket`). Its messages
 * are the run's requests and their replies its responses (status 101). */
/** A gRPC run's calls: each ended with one gRPC status, the server's (grpc-status) or pelt's
 * own where the call broke gRPC's rules (its message then starts 'pelt: '). */
export interface Quic {
  /** UDP datagrams sent and received (a datagram may carry several QUIC packets). */
  datagrams_sent: number
  datagrams_received: number
  /** QUIC packets sent, and those QUIC declared lost (their frames sent again as needed). */
  packets_sent: number
  packets_lost: number
  /** The bytes of the packets lost. */
  bytes_lost: number
  /** Losses that made pelt's sender cut its congestion window. */
  congestion_events: number
  /** Flow-control and stream-limit blocks (DATA_BLOCKED, STREAM_DATA_BLOCKED, STREAMS_BLOCKED):
   * pelt held back by the server's limits, and the server by pelt's. */
  blocked_by_server: number
  blocked_by_pelt: number
  /** `tlsEarlyData`: resumed connections whose 0-RTT requests the server took, or refused;
   * and the requests sent again after a refusal (each counted once in the run's requests). */
  early_accepted: number
  early_refused: number
  early_resent: number
}

export interface Grpc {
  /** Calls that ended with a status (the run's responses). */
  calls: number
  /** Of them, those with status OK. */
  ok: number
  /** Calls by status name: OK, UNAVAILABLE, DEADLINE_EXCEEDED, ... (CODE_<n> for others). */
  status: Record<string, number>
  /** The first grpc-message of each status that had one, by status name. */
  messages: Record<string, string>
  /** Response messages read whole. */
  messages_received: number
}

export interface WebSocket {
  /** Upgrades the server accepted (101 with the right accept key). */
  upgrades: number
  /** Upgrade time: the upgrade request written to the 101 read. */
  upgrade_us: Latency
  /** Sockets open and upgraded when the run ended. */
  held: number
  /** Sockets the server ended while pelt held them (a close frame or a TCP close). */
  drops: number
  /** Data messages received: replies and pushes. */
  messages_received: number
  messages_received_per_s: number
  received_bytes: number
  /** Messages received while none of pelt's awaited a reply (the server pushed them). */
  pushed: number
  pings_received: number
  pings_sent: number
  pongs: number
  /** The server's close frames by code ("1005": without a code). */
  close_codes: Record<string, number>
  histograms: { upgrade_us: string }
}

/** One second of the run: the JSON result's `timeline`, and each 'tick'. */
export interface TimelinePoint {
  second: number
  /** 1 for a whole second; more for seconds older than the run's last 15 minutes, merged. */
  length_s: number
  warmup: boolean
  sent: number
  completed: number
  errors: number
  rps: number
  status_classes: Record<string, number>
  latency_us: { p50: number; p90: number; p99: number; max: number }
  histogram?: string | null
  /** Time to first byte of the responses that completed in this second. */
  ttfb_us?: { p50: number; p90: number; p99: number; max: number }
  ttfb_histogram?: string
  /** Streamed responses read in this second: its events, the streams that ended in it, and
   * the time to first event and gaps of its events. */
  event_streams?: {
    streams: number; cut: number; met?: number; events: number
    ttft_us: { p50: number; p90: number; p99: number; max: number }
    gap_us: { p50: number; p90: number; p99: number; max: number }
    ttft_histogram: string; gap_histogram: string
    /** Tokens servers reported (usage) for the streams that ended in the second, and their
     * time per output token (absent without usage). */
    input_tokens?: number; output_tokens?: number
    tpot_us?: { p50: number; p90: number; p99: number; max: number }
    tpot_histogram?: string
  }
  /** A WebSocket run: what the second added to the `websocket` section's counts. */
  websocket?: {
    upgrades: number; messages_received: number; received_bytes: number; pushed: number
    pings_received: number; pings_sent: number; pongs: number; drops: number
  }
  /** An HTTP/3 run: what the second added to the `quic` section's counts. */
  quic?: Quic
  /** A gRPC run: the calls that ended with a status in this second, and those OK. */
  grpc?: { calls: number; ok: number }
  connections: number
  /** Open loop: the requests that started in this second over 1 ms after their due time. */
  late?: number
  /** With `stages` (or after a change from `--dashboard`): the rate (requests/s) or
   * connections asked for in this second. */
  target?: number
  /** The changes made from `--dashboard` that took effect in this second; absent when none. */
  changes?: Change[]
  /** With a library caller's sampling (`sampleEvery`): sampled requests of this second left
   * out, over 4,096 per thread; absent when none. */
  samples_dropped?: number
  /** With `monitor`: the server's processes, the host and pelt over this second. */
  resources?: ResourceSample
}

/** A change made while a run went (`pelt --dashboard`'s page or its POST /api/control). */
export interface Change {
  /** Seconds since the start when it took effect. */
  at_s: number
  what: 'rate' | 'connections' | 'pause' | 'resume' | 'stop'
  /** The rate (requests/s) or connections it set; absent for pause and stop. */
  value?: number
}

/** A second as a 'tick' event gives it: the result's timeline point, and its detail. */
export interface Tick extends TimelinePoint {
  /** The second's responses by status code, errors by kind, and bytes sent and received (the
   * result's timeline does not keep it). */
  detail?: { codes: Record<string, number>; errors: Record<string, number>; bytes_sent: number; bytes_received: number }
}

/** One process group over one second: CPU in cores (1: one core all second). */
export interface ProcessSample {
  processes: number
  cpu_user: number
  cpu_system: number
  /** The most CPU it could use: its threads that ran, at most the cores it may run on. */
  cpu_capacity: number
  rss_bytes: number
  threads: number
  fds: number
  ctx_switches: number
  /** pelt only: each worker thread's CPU in cores. */
  workers?: number[]
}

/** A machine over one second. */
export interface HostSample {
  cores: number
  cpu_user: number; cpu_system: number; cpu_softirq: number; cpu_irq: number; cpu_iowait: number; cpu_steal: number
  mem_used_bytes: number; mem_total_bytes: number
  net_rx_bytes: number; net_tx_bytes: number; net_rx_packets: number; net_tx_packets: number
  /** The busiest interface with a known link speed, and its busier direction's share of it. */
  busiest_link?: [string, number]
  tcp_retransmits: number; listen_overflows: number; listen_drops: number
}

/** `monitor`: one second's resources (a longer point: CPU means, memory peaks, counts summed). */
export interface ResourceSample {
  server?: ProcessSample
  host: HostSample
  /** With `monitorRemote`: the server's machine. */
  server_host?: HostSample
  pelt: ProcessSample
}

/** A process group over the run. */
export interface ProcessSummary {
  cpu_mean: number
  cpu_peak: number
  cpu_capacity: number
  cpu_us_per_request: number
  rss_peak_bytes: number
  threads_peak: number
  fds_peak: number
  ctx_switches: number
  worker_peak?: number
}

/** A machine over the run. */
export interface HostSummary {
  cores: number; cpu_busy_mean: number; cpu_busy_peak: number; cpu_softirq_mean: number
  mem_used_peak_bytes: number; net_rx_bytes: number; net_tx_bytes: number
  tcp_retransmits: number; listen_overflows: number; listen_drops: number
}

/** `monitor`: the resources over the run, and what limited it. */
export interface ResourcesResult {
  /** What `monitor` named and matched: "nginx: 2 processes". */
  monitored?: string
  server?: ProcessSummary
  pelt: ProcessSummary
  host: HostSummary
  /** With `monitorRemote`: the server's machine. */
  server_host?: HostSummary
  /** A remote monitor lost during the run: when and how (the run went on). */
  lost?: string
  verdict: Verdict
}

/** What limited the run. */
export type Bottleneck = 'server-cpu' | 'network' | 'host-cpu' | 'pelt' | 'connections' | 'latency' | 'unknown'

/** The verdict on what limited the run: every party at its limit, tightest first. */
export interface Verdict {
  bottleneck: Bottleneck
  /** The others at their limit too, tighter first. */
  also?: Exclude<Bottleneck, 'latency' | 'unknown'>[]
  evidence: string
  /** Open loop: the share of the median second's requests that started late, when they queued in pelt. */
  queued?: number
  /** The most requests/s the connections could carry (the connections' verdict, or a closed loop's latency-bound one). */
  connection_cap_per_s?: number
}

/** What a scenario run's virtual users did. */
export interface ScenarioResult {
  file: string
  /** duration_us: completed iterations, from the first request's due time (open loop: the
   * arrival) to the end of the last response or think time. */
  iterations: { started: number; completed: number; failed: number; duration_us: Latency }
  checks: { name: string; passed: number; failed: number }[]
  /** Each capture by `step: variable`: responses it found its value in, and found nothing in. */
  captures: { name: string; found: number; missing: number }[]
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
  /** Time to first byte of this target's responses (null in results from before pelt had it). */
  ttfb_us: Latency | null
  ttfb_histogram: string | null
  /** A replayed recording's own latencies for this name ($request_time, a HAR's time); absent without. */
  recorded_us?: Latency
  recorded_histogram?: string
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
  http: '1.1' | '2' | '3'
  streams: number | null
  connect_rate: number | null
  tls: { insecure: boolean; resumption: boolean; cacert: string | null; version: string | null; sni: string | null } | null
  tls_handshakes: { full: number; resumed: number; time_us: Latency } | null
  load_model: 'closed' | 'open'
  rate: number | null
  arrival: 'constant' | 'poisson' | null
  max_connections: number | null
  /** Open loop: the batch window, microseconds (`batchWindow`; 0: none); null for a closed loop. */
  batch_window_us: number | null
  warmup_s: number
  grace_s: number
  duration_limit_s: number | null
  requests_limit: number | null
  timeout_s: number
  request_set: {
    from: 'targets' | 'bodies' | 'url' | 'scenario' | 'prompts'
    file: string | null
    entries: number
    order: 'sequential' | 'random'
    seed: number | null
    encoded_bytes: number
    /** What the targets file held that the run left out; absent when none were. */
    skipped?: { bad_lines: number; first_bad: string | null; other_origins: number; origin: string | null }
  } | null
  unix_socket: string | null
  stages: { of: 'rate' | 'connections'; start: number; stages: { duration_s: number; target: number }[] } | null
  /** `replay`: the recording the due times came from (requests, span in recorded seconds). */
  replay?: { recorded: number; span_s: number; speed: number; laps: boolean } | null
  targets: TargetResult[]
  /** A scenario run (`scenario`): its users' iterations and checks (its steps are `targets`). */
  scenario: ScenarioResult | null
  /** With `monitor`; null otherwise. */
  resources: ResourcesResult | null
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
  /** The errors that came with a protocol's code, by kind and code (a server's stream reset
   *  code, the code a QUIC connection ended with); absent when none did. */
  error_codes?: Record<string, Record<string, number>>
  latency_us: Latency
  /** Time to first byte: from where latency starts to the response's first byte read. */
  ttfb_us: Latency | null
  /** Streamed responses (text/event-stream, or every body with `stream`), event by event;
   * absent when none was read. Events are tokens for an LLM: TTFT, inter-token gaps, time per
   * output token, tokens/s. */
  event_streams?: EventStreams
  /** A ws:// or wss:// run: upgrades, held and dropped sockets, messages received, pings,
   * close codes; absent otherwise. */
  websocket?: WebSocket
  /** A grpc:// or grpcs:// run: calls by gRPC status, the first grpc-message of each, the
   * response messages read; absent otherwise. */
  grpc?: Grpc
  /** An HTTP/3 run (`http3`): what QUIC counted underneath the requests; absent otherwise. */
  quic?: Quic
  /** A run with a script (`script`): what its `pelt.counter(name)` and
   * `pelt.histogram(name)` kept, every thread's together; absent without a script. */
  script?: Script
  /** What was changed while the run went (`pelt --dashboard`), in order; absent when none. */
  changes?: Change[]
  latency_from: 'send' | 'due'
  open_loop: { service_time_us: Latency; lag_us: Latency; late_requests: number; late_threshold_us: number; backlog_at_end: number } | null
  warmup: { duration_s: number; requests: Requests; status: Record<string, number>; errors: Record<string, number>; latency_us: Latency } | null
  bytes: { sent: number; received: number }
  /** Bytes per second of `duration_s`. */
  throughput_bytes_per_s: { sent: number; received: number }
  connections_opened: number
  timeline: TimelinePoint[]
  thresholds: Threshold[]
  notes: string[]
  started_unix_ms: number
  histograms: { latency_us: string; ttfb_us: string | null; service_time_us: string | null; lag_us: string | null; handshake_us: string | null; warmup_latency_us: string | null; iteration_us: string | null }
  merged_from: string[]
  /** A fleet run (pelt URL --agents N): each agent's part; null for one process. */
  fleet: {
    agents: {
      rank: number; host: string; address: string; threads: number; first_worker: number
      clock_offset_ms: number; rtt_ms: number; start_skew_ms: number | null
      state: 'finished' | 'interrupted' | 'lost'; problem: string | null
      requests: Requests; rps: number; latency_us: Latency | null
      /** A lost agent: the most requests it may have sent after its last report. */
      unreported_max?: number
    }[]
    start_spread_ms: number | null
    start_skew_max_ms: number | null
    lost: string[]
  } | null
}

/** One sampled request ('samples', with `sampleEvery`). */
export interface Sample {
  /** The request's index in the run. */
  index: number
  /** The index of its target (with `targets`), else 0. */
  target: number
  /** Its status code; 0 when it failed. */
  status: number
  /** The error kind ('timeout', 'refused', ...) or null. */
  error: string | null
  latencyUs: number
  /** With `sampleResponses`: the response as it came, head and body (at most 64 KiB). */
  response?: string
}

/** A run under way: awaitable (resolves to the result), with a 'tick' each second and, with
 * `sampleEvery`, that second's sampled requests as 'samples'. */
export declare class Run extends EventEmitter implements PromiseLike<Result> {
  then<A = Result, B = never>(
    onResult?: ((r: Result) => A | PromiseLike<A>) | null,
    onError?: ((e: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B>
  catch<B = never>(onError?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<Result | B>
  finally(onEnd?: (() => void) | null): Promise<Result>
  /** Stops sending (as Ctrl-C); resolves to the result, marked interrupted. */
  stop(): Promise<Result>
  on(event: 'tick', listener: (point: Tick) => void): this
  once(event: 'tick', listener: (point: Tick) => void): this
  on(event: 'samples', listener: (samples: Sample[]) => void): this
  once(event: 'samples', listener: (samples: Sample[]) => void): this
}

/** One run's figures in compare()'s document. */
export interface CompareRun {
  rps: number
  p50_us: number
  p99_us: number
  sent: number
  completed: number
  errors: number
  non_2xx: number
  duration_s: number
  /** With `monitor`: the server's CPU-microseconds per request and peak RSS. */
  server_cpu_us_per_request?: number
  server_rss_peak_bytes?: number
  /** With `monitor`: the run's verdict ('server-cpu', 'server-cpu+pelt'). */
  bottleneck?: string
}

/** compare()'s result: `pelt compare --json`'s document. */
export interface CompareResult {
  pelt_version: string
  repeat: number
  /** Runs done (all of them unless interrupted). */
  runs: number
  interrupted: boolean
  targets: { name: string; url: string }[]
  vary: { key: string; values: string[] }[]
  run: { duration_s: number | null; requests: number | null; warmup_s: number; load_model: 'closed' | 'open'; method: string }
  /** One per target x combination of settings, in the order they ran. */
  rows: {
    target: string
    url: string
    settings: Record<string, string>
    median: { rps: number; p50_us: number; p99_us: number; errors_pct: number; non_2xx_pct: number; rps_min: number; rps_max: number;
              /** With `monitor`: the server's CPU-microseconds per request and peak RSS (medians). */
              server_cpu_us_per_request?: number; server_rss_peak_bytes?: number }
    /** With `monitor`: the verdict most of the row's runs gave ('server-cpu', 'server-cpu+pelt'). */
    bottleneck?: string
    runs: CompareRun[]
  }[]
}

/** A run of compare() that ended ('run'). */
export interface CompareProgress {
  done: number
  total: number
  round: number
  /** The target and its settings: 'nginx connections=16'. */
  cell: string
  figures: CompareRun
}

/** compare()'s own options (`pelt compare`'s flags); the rest are run()'s, without `url`. */
// BEGIN CompareSettings: generated from pelt_load::options::COMPARE (PELT_BLESS=1 cargo test -p pelt-load options)
export interface CompareSettings {
  /**
   * --target: A target, NAME=URL (or just URL, named by its host:port); repeatable. Node.js also
   * takes an object of names and URLs.
   */
  target?: Record<string, string> | string[] | string
  /**
   * --vary: A setting to compare, KEY=V1,V2,...: every combination runs against every target.
   * Repeatable. KEY is any load flag by its long name (connections, threads, rate, pipeline,
   * streams, method, timeout, ...), plus keepalive=on,off, http=1.1,2,3 and tls=resume,full,0rtt
   * (0rtt: HTTP/3 only). Node.js also takes an object of keys and lists of values.
   */
  vary?: Record<string, (string | number)[] | string | number> | string[] | string
  /**
   * --repeat: Run every combination this many times, interleaved; the table shows medians.
   * [default: 1]
   */
  repeat?: Count
}
// END CompareSettings

export type CompareOptions = Omit<RunOptions, 'url'> & CompareSettings

/** A comparison under way: awaitable (resolves to the document), with a 'run' as each ends. */
export declare class Comparison extends EventEmitter implements PromiseLike<CompareResult> {
  then<A = CompareResult, B = never>(
    onResult?: ((r: CompareResult) => A | PromiseLike<A>) | null,
    onError?: ((e: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B>
  catch<B = never>(onError?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<CompareResult | B>
  finally(onEnd?: (() => void) | null): Promise<CompareResult>
  /** Stops the comparison (as Ctrl-C); resolves to the document, marked interrupted. */
  stop(): Promise<CompareResult>
  on(event: 'run', listener: (run: CompareProgress) => void): this
  once(event: 'run', listener: (run: CompareProgress) => void): this
}

/** `pelt compare`: the same load against several targets and settings. Throws TypeError or
 * RangeError (the CLI's message) on a bad option or cell, before any traffic. */
export declare function compare(options: CompareOptions): Comparison

/** One step of findMax()'s search (`pelt find-max --json`'s `steps`). */
export interface FindMaxStep {
  step: number
  /** 'probe' (closed loop, no rate), 'step-up', 'step-down' or 'bisect'. */
  phase: string
  /** The rate asked for (null for the probe). */
  rate: number | null
  achieved_rps: number
  p50_us: number
  p99_us: number
  max_us: number
  sent: number
  completed: number
  errors: number
  lag_p99_us: number | null
  /** Completed at least `rate_held` of the rate asked for. */
  rate_held: boolean
  thresholds: Threshold[]
  /** Every objective held, and the rate did. */
  passed: boolean
  /** With `monitor`. */
  server?: FindMaxServer
}

/** findMax()'s result: `pelt find-max --json`'s document. */
export interface FindMaxResult {
  pelt_version: string
  target: string
  method: string
  slo: string[]
  rate_held: number
  precision: number
  step_duration_s: number
  warmup_s: number
  connections: number
  max_connections: number
  interrupted: boolean
  steps: FindMaxStep[]
  /** The highest rate that passed (null: none did). */
  answer: { rate: number; step: number; achieved_rps: number; p50_us: number; p99_us: number; server?: FindMaxServer } | null
}

/** With `monitor`: the server's CPU at a step, and what limited the step. */
export interface FindMaxServer {
  cpu_cores: number
  cpu_capacity: number
  cpu_us_per_request: number
  bottleneck: Bottleneck
  also?: Bottleneck[]
  /** The verdict as the summary names it. */
  headline: string
}

/** findMax()'s own options (`pelt find-max`'s flags); the rest are run()'s. */
// BEGIN FindMaxSettings: generated from pelt_load::options::FIND_MAX (PELT_BLESS=1 cargo test -p pelt-load options)
export interface FindMaxSettings {
  /**
   * --slo: An objective every step must meet, as --expect: p99<20ms, errors<0.1%, 5xx<1%
   * (repeatable, at least one).
   */
  slo?: string | string[]
  /**
   * --start: The first rate to try [default: half of what a closed-loop probe reaches].
   */
  start?: number | string
  /**
   * --max-rate: Never try more than this rate.
   */
  maxRate?: number | string
  /**
   * --precision: Stop bisecting when the rate that held and the one that failed are this close.
   * [default: 5%]
   */
  precision?: number | string
  /**
   * --max-steps: Run at most this many steps (the probe not counted). [default: 20]
   */
  maxSteps?: Count
}
// END FindMaxSettings

export type FindMaxOptions = RunOptions & FindMaxSettings

/** A search under way: awaitable (resolves to the document), with a 'step' as each ends. */
export declare class Search extends EventEmitter implements PromiseLike<FindMaxResult> {
  then<A = FindMaxResult, B = never>(
    onResult?: ((r: FindMaxResult) => A | PromiseLike<A>) | null,
    onError?: ((e: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B>
  catch<B = never>(onError?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<FindMaxResult | B>
  finally(onEnd?: (() => void) | null): Promise<FindMaxResult>
  /** Stops the search (as Ctrl-C); resolves to the document, marked interrupted. */
  stop(): Promise<FindMaxResult>
  on(event: 'step', listener: (step: FindMaxStep) => void): this
  once(event: 'step', listener: (step: FindMaxStep) => void): this
}

/** `pelt find-max`: the highest open-loop rate at which every `slo` holds. Throws TypeError or
 * RangeError (the CLI's message) on a bad option, before any traffic. */
export declare function findMax(options: FindMaxOptions): Search

/** Starts a load test. Throws TypeError or RangeError (the CLI's message) on a bad option. */
export declare function run(options: RunOptions): Run
/** Checks options as run() would, sending nothing. */
export declare function check(options: RunOptions): void

/** `pelt serve`'s options in camelCase; port 0 (the default) lets the system pick one. */
// BEGIN ServerOptions: generated from pelt_load::options::SERVE (PELT_BLESS=1 cargo test -p pelt-load options)
export interface ServerOptions {
  /**
   * --unix-socket: Listen on this Unix socket instead of a port (created, and removed at exit).
   */
  unixSocket?: string
  /**
   * --port: Port to listen on; 0 picks a free one (Node.js: 0 unless given). [default: 0]
   */
  port?: number
  /**
   * --host: Address to listen on. [default: 127.0.0.1]
   */
  host?: string
  /**
   * --threads: Server threads. [default: 1]
   */
  threads?: Count
  /**
   * --delay: Wait this long before each response: 5ms, 1s. [default: 0]
   */
  delay?: Duration
  /**
   * --work: Hold a server thread this long per request (it blocks, like a CPU-heavy or
   * synchronous handler): capacity is about --threads / TIME requests/s. 1ms, 200us. [default:
   * 0]
   */
  work?: Duration
  /**
   * --burn: Spin a server thread on the CPU this long per request (a CPU-heavy handler, as
   * --monitor sees one): capacity is about --threads / TIME requests/s where the threads have
   * cores. 100us, 1ms. [default: 0]
   */
  burn?: Duration
  /**
   * --body-size: Response body size in bytes. [default: 2]
   */
  bodySize?: Count
  /**
   * --status: Status code of normal responses. [default: 200]
   */
  status?: number
  /**
   * --error-rate: Share of responses answered with 500 instead: 1%, 0.5%, 0.01. [default: 0.0]
   */
  errorRate?: number | string
  /**
   * --close: Send Connection: close and close after every response.
   */
  close?: boolean
  /**
   * --stall: Freeze every response for this long at --stall-at (a server stall, for open-loop
   * tests).
   */
  stall?: Duration
  /**
   * --stall-at: When the stall starts, counted from the server's start.
   */
  stallAt?: Duration
  /**
   * --chunked: Send bodies with chunked transfer encoding.
   */
  chunked?: boolean
  /**
   * --sse: Answer every request with a stream of N server-sent events (text/event-stream)
   * instead of a body, timed by --sse-first, --sse-interval and --sse-jitter.
   */
  sse?: number
  /**
   * --sse-first: --sse: wait this long after the head before the first event (a model's time to
   * first token). [default: 0]
   */
  sseFirst?: Duration
  /**
   * --sse-interval: --sse: the gap between events. [default: 10ms]
   */
  sseInterval?: Duration
  /**
   * --sse-jitter: --sse: move each gap by up to this much either way (uniformly). [default: 0]
   */
  sseJitter?: Duration
  /**
   * --sse-body: --sse: each event's data: this text, or openai for OpenAI's streaming shape as
   * each request asks for it: chat (messages) or text (prompt) completion chunks of --sse-tokens
   * tokens, max_tokens of them (--sse chunks when the request does not say), a usage chunk when
   * stream_options.include_usage asks, then data: [DONE]; a prompt's tokens are its words.
   * [default: the event's index]
   */
  sseBody?: string
  /**
   * --sse-tokens: --sse-body openai: tokens in each chunk (the last one may have fewer).
   * [default: 1]
   */
  sseTokens?: number
  /**
   * --sse-prefill: --sse-body openai: add this to --sse-first for each token (word) of the
   * request's prompt, as a model's prefill grows with the prompt. [default: 0]
   */
  ssePrefill?: Duration
  /**
   * --sse-log: --sse: write a JSON line per stream to FILE as it ends: its request's arrival,
   * first token and end (microseconds from the server's start; ttft_us, e2e_us), its status,
   * prompt and completion tokens, and whether the client went before its end (cancelled): the
   * server's own account, to check a client's figures against.
   */
  sseLog?: string
  /**
   * --ws: Accept WebSocket upgrades (ws://, on any path) and echo each message, after --delay;
   * other requests are answered as ever.
   */
  ws?: boolean
  /**
   * --ws-push: --ws: instead of echoing, send the body as a text message every TIME on each
   * socket (a feed); messages received are counted.
   */
  wsPush?: Duration
  /**
   * --tls: Serve HTTPS. Without --cert/--key, with a fresh self-signed certificate for
   * localhost, 127.0.0.1 and ::1 (pelt serve writes it to the file its second line names, for a
   * client's --cacert).
   */
  tls?: boolean
  /**
   * --cert: Serve HTTPS with this PEM certificate chain (needs --key).
   */
  cert?: string
  /**
   * --key: The PEM private key of --cert.
   */
  key?: string
  /**
   * --h2: Also serve HTTP/2: h2c with prior knowledge on http, ALPN h2 with --tls.
   */
  h2?: boolean
  /**
   * --max-streams: HTTP/2: allow this many concurrent streams per connection
   * (SETTINGS_MAX_CONCURRENT_STREAMS). [default: 200]
   */
  maxStreams?: Count
  /**
   * --max-requests: End each connection after N requests (HTTP/1.1: Connection: close; HTTP/2:
   * GOAWAY), as nginx's keepalive_requests.
   */
  maxRequests?: Count
}
// END ServerOptions

export interface Server {
  url: string
  port: number
  /** Requests served so far; after close(), in all. */
  readonly served: number
  /** Stops serving; resolves to the requests served. */
  close(): Promise<number>
  /** Node's form: calls back with null once stopped. */
  close(callback: (error: Error | null) => void): void
}

export declare function startServer(options?: ServerOptions): Promise<Server>

/** loadtest 8's options (see docs/NODE.md for where pelt differs). */
export interface LoadtestOptions {
  /** http:// or https:// (ws:// and wss:// are refused until pelt's WebSocket load lands). */
  url: string
  maxRequests?: number
  /** Default 10 when maxRequests is not given either. */
  maxSeconds?: number
  /** Default 10. */
  concurrency?: number
  requestsPerSecond?: number
  /** loadtest's command-line spelling of requestsPerSecond. */
  rps?: number | string
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | Lowercase<'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'>
  /** A text, an object (sent as JSON, or as a form with that contentType), or a function of
   * the request's index (called ahead of the run: see requestGeneratorCount). */
  body?: string | object | ((index: number) => unknown)
  data?: string | object
  /** A POST body; postFile: a file's text, or a .js module's default export. */
  postBody?: string | object
  postFile?: string
  putFile?: string
  patchBody?: string | object
  patchFile?: string
  contentType?: string
  /** An object, a 'key:value' text, or an array of them. */
  headers?: Record<string, string | number> | string | string[]
  cookies?: string[] | string
  indexParam?: string | RegExp
  /** loadtest's command-line spelling of indexParam. */
  index?: string
  indexParamLiteral?: string
  /** The index that replaces indexParam, per request (called ahead of the run). */
  indexParamCallback?: () => string | number
  insecure?: boolean
  agentKeepAlive?: boolean
  keepalive?: boolean
  agent?: boolean
  /** Milliseconds; 0 (the default): none. */
  timeout?: number
  /** Client certificate and key files. */
  cert?: string
  key?: string
  /** https: an OpenSSL method name, as pelt's TLS version (TLSv1_2_method, TLSv1_3_method,
   * TLS_method for either). */
  secureProtocol?: string
  quiet?: boolean
  /** Accepted, changes nothing: pelt always writes to raw sockets. */
  tcp?: boolean
  recover?: boolean
  /** Sampled requests (every statusSampleEvery-th, at most 4096 per thread and second), once a
   * second, never on the engine's path. */
  statusCallback?: (error: Error | null, result: LoadtestStatus) => void
  /** loadtest's requestGenerator(options, params, client, callback), or a module exporting it:
   * called ahead of the run, recording the requests it would send. */
  requestGenerator?: string | ((options: object, params: LoadtestParams, client: (params: LoadtestParams, callback?: unknown) => LoadtestRequest, callback: unknown) => unknown)
  /** pelt's own: how many requests per-request JavaScript builds ahead (default: maxRequests, at
   * most 1000); request i sends the (i mod count)-th. */
  requestGeneratorCount?: number
  /** pelt's own: statusCallback sees every N-th request (default 1). */
  statusSampleEvery?: number
  /** pelt's own: threads (the command line's --cores). */
  cores?: number
}

/** What statusCallback gets for a sampled request. */
export interface LoadtestStatus {
  host: string
  path: string
  method: string
  statusCode?: number
  requestElapsed: number
  requestIndex: number
  instanceIndex: number
}

/** The request parameters requestGenerator gets and hands to its client. */
export interface LoadtestParams {
  protocol: string
  hostname: string
  host: string
  port: string
  path: string
  method: string
  headers: Record<string, string | number>
  [key: string]: unknown
}

/** What requestGenerator's client returns: the request it records. */
export interface LoadtestRequest {
  write(chunk?: unknown): void
  end(chunk?: unknown): void
  setHeader(name: string, value: string | number): void
  on(...args: unknown[]): LoadtestRequest
  once(...args: unknown[]): LoadtestRequest
  setTimeout(...args: unknown[]): LoadtestRequest
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
  minLatencyMs: number
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
