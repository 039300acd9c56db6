// Types of pelt/autocannon: autocannon 9's API on pelt.
import { EventEmitter } from 'node:events'

declare function autocannon(opts: autocannon.AutocannonOptions): autocannon.AutocannonInstance
declare function autocannon(opts: autocannon.AutocannonOptions, cb: (error: Error | null, result: autocannon.AutocannonResult) => void): autocannon.AutocannonInstance
declare namespace autocannon {
  /** One request of autocannon's `requests` sequence. */
  interface AutocannonRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Changes the request before it is sent (built ahead of the run: `requestCount` of them,
     * in sequence, with the context carried along); returning nothing starts the sequence
     * again. A module path is required. */
    setupRequest?: ((request: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest | null | undefined | false) | string
    /** Refused with a TypeError: it runs JavaScript on every response. */
    onResponse?: never
  }

  /** autocannon's options (its README's), as pelt/autocannon reads them. */
  interface AutocannonOptions {
    /** The target, or several: connection i sends to URL i mod n (on several origins, one pelt
     * run per origin, side by side, one result). */
    url: string | string[]
    /** A Unix domain socket to connect to; the URL still gives Host and path. */
    socketPath?: string
    /** pelt's engine threads (autocannon's worker threads). */
    workers?: number
    /** Default 10. */
    connections?: number
    /** Seconds, or a timestring ('30s', '2m'). Default 10. */
    duration?: number | string
    /** Requests to make before the run ends (duration is then ignored). */
    amount?: number
    /** Milliseconds between Req/Sec and Bytes/Sec samples: 1000 only. */
    sampleInt?: number
    /** Seconds before a request times out. Default 10. */
    timeout?: number
    /** Requests in flight per connection (HTTP/1.1 pipelining). Default 1. */
    pipelining?: number
    /** Stop once this many requests failed (checked once a second). */
    bailout?: number
    method?: string
    title?: string
    body?: string | Buffer
    /** multipart/form-data fields ({name: {type: 'text', value} | {type: 'file', path}}), as
     * an object, JSON, or the path of a JSON file. */
    form?: string | Record<string, { type: 'text', value: string } | { type: 'file', path: string, options?: { filename?: string, filepath?: string, contentType?: string } }>
    headers?: Record<string, string>
    /** setupRequest's context at the start of each pass over `requests`. */
    initialContext?: Record<string, unknown>
    /** Called with each connection's client before the run: its set* calls shape the requests
     * (every connection must get the same), its 'response', 'body' and 'headers' listeners get
     * sampled responses. */
    setupClient?: ((client: AutocannonClient) => void) | string
    /** Called with the body of sampled responses (every one up to 4096 per thread and second):
     * those for which it returns a falsy value count in `mismatches`. */
    verifyBody?: ((body: string) => unknown) | string
    /** At most this many requests per connection (pelt: times the connections, overall). */
    maxConnectionRequests?: number
    maxOverallRequests?: number
    /** Requests per second per connection (pelt: times the connections, overall). */
    connectionRate?: number
    /** Requests per second overall: pelt's open loop, latency from each request's due time. */
    overallRate?: number
    /** Refused with a TypeError: pelt always measures from the due time. */
    ignoreCoordinatedOmission?: never
    /** 1 only: a connection per request. */
    reconnectRate?: number
    requests?: AutocannonRequest[]
    /** A parsed HAR document: its requests to the URL's origin. */
    har?: object
    /** Replaces [<id>] in bodies with a fresh UUID per request. */
    idReplacement?: boolean
    /** Runs again and again (a 'done' event each time) until stop(). */
    forever?: boolean
    servername?: string
    /** Refused with a TypeError: one latency histogram holds every response. */
    excludeErrorStats?: never
    /** Sampled responses whose body is not this count in `mismatches`. */
    expectBody?: string
    /** ca, cert, key (PEM texts or buffers) and servername; the certificate is never verified,
     * as autocannon never verifies it. */
    tlsOptions?: { ca?: string | Buffer | Array<string | Buffer>, cert?: string | Buffer, key?: string | Buffer, servername?: string, rejectUnauthorized?: boolean }
    /** The result without aggregation, for aggregateResult(). */
    skipAggregateResult?: boolean
    /** A run first with these connections and duration; its result is `result.warmup`. */
    warmup?: { connections?: number, duration?: number | string }
    /** Prints the result as one JSON line on standard output. */
    json?: boolean
    renderProgressBar?: boolean
    renderResultsTable?: boolean
    renderLatencyTable?: boolean
    renderStatusCodes?: boolean
    debug?: boolean
    verbose?: boolean
    outputStream?: NodeJS.WritableStream
    progressBarString?: string
    input?: string
    cert?: string
    key?: string
    ca?: string | string[]
    /** pelt's own: how many requests setupRequest builds ahead (default: amount, at most 1000). */
    requestCount?: number
  }

  /** A statistic of autocannon's result: latency (milliseconds), requests or bytes per second. */
  interface AutocannonHistogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    p0_001: number
    p0_01: number
    p0_1: number
    p1: number
    p2_5: number
    p10: number
    p25: number
    p50: number
    p75: number
    p90: number
    p97_5: number
    p99: number
    p99_9: number
    p99_99: number
    p99_999: number
    total?: number
    totalCount?: number
    sent?: number
  }

  interface AutocannonResult {
    title?: string
    url: string | string[]
    socketPath?: string
    connections: number
    sampleInt: number
    pipelining: number
    workers?: number
    duration: number
    samples: number
    start: Date
    finish: Date
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    resets: number
    '1xx': number
    '2xx': number
    '3xx': number
    '4xx': number
    '5xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: AutocannonHistogram
    requests: AutocannonHistogram
    throughput: AutocannonHistogram
    warmup?: AutocannonResult
    /** pelt's own, with verifyBody or expectBody: the responses checked, and those left
     * unchecked (over 4096 per thread and second). */
    bodiesChecked?: number
    bodiesUnchecked?: number
    /** pelt's own result (its --json document). */
    readonly pelt: unknown
  }

  /** A connection's client, as setupClient and the 'response' event get it. */
  interface AutocannonClient extends EventEmitter {
    setHeaders(headers?: Record<string, string>): void
    setBody(body?: string | Buffer): void
    setHeadersAndBody(headers?: Record<string, string>, body?: string | Buffer): void
    setRequest(request: AutocannonRequest): void
    setRequests(requests: AutocannonRequest[]): void
    on(event: 'response', listener: (statusCode: number, resBytes: number, responseTime: number) => void): this
    on(event: 'headers', listener: (headers: { statusCode: number, headers: Record<string, string> }) => void): this
    on(event: 'body', listener: (body: Buffer) => void): this
    on(event: string, listener: (...args: any[]) => void): this
  }

  /** The instance autocannon() returns. */
  interface AutocannonInstance extends EventEmitter, PromiseLike<AutocannonResult> {
    opts: AutocannonOptions
    stop(): void
    catch(onError: (error: Error) => unknown): Promise<unknown>
    on(event: 'start', listener: () => void): this
    on(event: 'tick', listener: (counts: { counter: number, bytes: number }) => void): this
    on(event: 'done', listener: (result: AutocannonResult) => void): this
    on(event: 'response', listener: (client: AutocannonClient, statusCode: number, resBytes: number, responseTime: number) => void): this
    on(event: 'reqError', listener: (error: Error) => void): this
    on(event: 'error', listener: (error: Error) => void): this
  }

  function track(instance: AutocannonInstance, opts?: { outputStream?: NodeJS.WritableStream, renderProgressBar?: boolean, renderResultsTable?: boolean, renderLatencyTable?: boolean, renderStatusCodes?: boolean, progressBarString?: string }): AutocannonInstance
  function printResult(result: AutocannonResult, opts?: { outputStream?: NodeJS.WritableStream, renderResultsTable?: boolean, renderLatencyTable?: boolean, renderStatusCodes?: boolean, verbose?: boolean }): string
  function aggregateResult(results: object[], opts?: Partial<AutocannonOptions>): AutocannonResult
}
export = autocannon
