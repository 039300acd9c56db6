'use strict'
// autocannon 9's API on pelt: `const autocannon = require('pelt/autocannon')`, or
// `import autocannon from 'pelt/autocannon'` (autocannon.mjs).
//
// autocannon(opts[, cb]) reads autocannon's options, turns them into pelt's run() options and
// pelt's result into autocannon's: latency percentiles in milliseconds (to the microsecond,
// where autocannon rounds to whole milliseconds), Req/Sec and Bytes/Sec over the run's
// seconds, status codes, errors. The instance is autocannon's EventEmitter (start, tick, done,
// response, reqError) with stop(), and a promise without a callback. JavaScript that
// autocannon runs per request is built ahead of the run (setupRequest, a setupClient's
// requests) or fed from sampled responses (the 'response' event, a client's 'body' and
// 'headers', verifyBody and expectBody: every response up to 4096 per thread and second, the
// result says how many); what needs JavaScript on every response to shape the next request
// (onResponse) is refused with a TypeError that says why. The engine never calls JavaScript
// per request.

const { EventEmitter } = require('node:events')
const fs = require('node:fs')
const path = require('node:path')
const pelt = require('./pelt.js')
const native = require('./index.js')
const { parseResponse } = require('./response.js')

/** autocannon's latency percentiles (hdr-histogram-percentiles-obj's), as its result keys. */
const PERCENTILES = [0.001, 0.01, 0.1, 1, 2.5, 10, 25, 50, 75, 90, 97.5, 99, 99.9, 99.99, 99.999]
const key = p => `p${p}`.replace('.', '_')

/** autocannon's defaults (its lib/defaultOptions.js). */
const DEFAULTS = {
  headers: {},
  method: 'GET',
  duration: 10,
  connections: 10,
  sampleInt: 1000,
  pipelining: 1,
  timeout: 10,
  maxConnectionRequests: 0,
  maxOverallRequests: 0,
  connectionRate: 0,
  overallRate: 0,
  amount: 0,
  reconnectRate: 0,
  forever: false,
  idReplacement: false,
  excludeErrorStats: false,
}

/** The options autocannon(opts) reads. The command line's own (rendering, json, debug...)
 * are read too, as autocannon reads them from the same object. */
const AUTOCANNON_OPTIONS = new Set([
  'url', 'socketPath', 'workers', 'connections', 'duration', 'amount', 'sampleInt', 'timeout',
  'pipelining', 'bailout', 'method', 'title', 'body', 'form', 'headers', 'initialContext',
  'setupClient', 'verifyBody', 'maxConnectionRequests', 'maxOverallRequests',
  'connectionRate', 'overallRate', 'ignoreCoordinatedOmission', 'reconnectRate', 'requests',
  'har', 'idReplacement', 'forever', 'servername', 'excludeErrorStats', 'expectBody',
  'tlsOptions', 'skipAggregateResult', 'warmup',
  'json', 'renderProgressBar', 'renderResultsTable', 'renderLatencyTable', 'renderStatusCodes',
  'debug', 'verbose', 'outputStream', 'progressBarString', 'input', 'cert', 'key', 'ca',
  // pelt's own: the requests built ahead by setupRequest.
  'requestCount',
])

/** autocannon options pelt cannot honour (when set), and why. */
const REFUSED = {
  excludeErrorStats: 'pelt keeps one latency histogram for every response, whatever its status',
  ignoreCoordinatedOmission: "pelt's open loop always measures latency from each request's due time",
  onPort: 'pelt-autocannon does not start the server; start it first and give its URL',
}

/** How many requests setupRequest builds ahead when not told. */
const BUILT_DEFAULT = 1000

/** autocannon's timestring durations ('10s', '1m30s', '2 minutes'), in seconds. */
const UNITS = { ms: 0.001, s: 1, sec: 1, secs: 1, second: 1, seconds: 1, m: 60, min: 60, mins: 60, minute: 60, minutes: 60, h: 3600, hr: 3600, hrs: 3600, hour: 3600, hours: 3600, d: 86400, day: 86400, days: 86400 }
function seconds(text) {
  const parts = [...String(text).toLowerCase().matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/g)]
  if (parts.length === 0 || parts.some(([, , unit]) => !(unit in UNITS))) {
    throw new Error(`duration entered was in an invalid format: ${text}`)
  }
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNITS[unit], 0)
}

/** A body as bytes (autocannon's forms: a text, a number, a Buffer). */
function bodyBytes(body) {
  if (body === undefined || body === null || body === '') return undefined
  if (Buffer.isBuffer(body)) return body
  if (typeof body === 'string' || typeof body === 'number') return Buffer.from(String(body))
  if (body instanceof Uint8Array) return Buffer.from(body)
  throw new Error('body must be either a string or a buffer')
}

/** autocannon's form (a JSON text, a path to one, or an object of fields) as a
 * multipart/form-data body and its content type, built here: the whole body is known before
 * the run. */
function multipart(form) {
  let fields = form
  if (typeof form === 'string') {
    try {
      fields = JSON.parse(form)
    } catch {
      try {
        fields = JSON.parse(fs.readFileSync(path.resolve(form), 'utf8'))
      } catch {
        throw new Error('Invalid JSON or file where to get form data')
      }
    }
  }
  const boundary = `--------------------------pelt${Date.now().toString(16)}${Math.random().toString(16).slice(2)}`
  const parts = []
  for (const [name, field] of Object.entries(fields || {})) {
    const type = field && field.type
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${name}"`
    let value
    if (type === 'file') {
      if (!field.path) throw new Error(`Missing key 'path' in form object for key '${name}'`)
      const options = field.options || {}
      const filename = options.filepath || options.filename || path.basename(field.path)
      head += `; filename="${filename}"\r\nContent-Type: ${options.contentType || 'application/octet-stream'}`
      value = fs.readFileSync(field.path)
    } else if (type === 'text') {
      if (!field.value) throw new Error(`Missing key 'value' in form object for key '${name}'`)
      value = Buffer.from(String(field.value))
    } else {
      throw new Error("A 'type' key with value 'text' or 'file' should be specified")
    }
    parts.push(Buffer.from(`${head}\r\n\r\n`), value, Buffer.from('\r\n'))
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` }
}

/** A HAR document's requests, by origin (as autocannon's parseHAR). */
function harRequests(har) {
  const byOrigin = new Map()
  try {
    if (!har || typeof har !== 'object' || typeof har.log !== 'object' || !Array.isArray(har.log.entries) || !har.log.entries.length) {
      throw new Error('no entries found')
    }
    har.log.entries.forEach((entry, i) => {
      if (!entry || typeof entry !== 'object' || !entry.request || typeof entry.request !== 'object') {
        throw new Error(`invalid request in entry #${i + 1}`)
      }
      const { method, url, headers: list, postData } = entry.request
      if (!Array.isArray(list)) throw new Error(`invalid headers array in entry #${i + 1}`)
      const headers = {}
      list.forEach((h, j) => {
        if (!h || typeof h.name !== 'string' || typeof h.value !== 'string') {
          throw new Error(`invalid name or value in header #${j + 1} of entry #${i + 1}`)
        }
        headers[h.name] = h.value
      })
      const u = new URL(url)
      const request = { method, path: `${u.pathname}${u.search}${u.hash}`, headers }
      if (postData && typeof postData.text === 'string') request.body = postData.text
      if (!byOrigin.has(u.origin)) byOrigin.set(u.origin, [])
      byOrigin.get(u.origin).push(request)
    })
  } catch (e) {
    throw new Error(`Could not parse HAR content: ${e.message}`)
  }
  return byOrigin
}

/** Names warned about once each: options autocannon itself ignores. */
const warned = new Set()

const isFn = v => !v || typeof v === 'function' || typeof v === 'string'

/** A module path for a function option (autocannon's workers form): its export. */
function fnOf(v) {
  if (typeof v !== 'string') return v
  const module = require(path.resolve(v))
  return typeof module === 'function' ? module : module.default
}

/**
 * autocannon's options, checked as its validate() checks them (its messages, as Errors),
 * with its defaults; and what pelt cannot honour, as TypeErrors that say why.
 */
function validate(given) {
  if (given === null || typeof given !== 'object') throw new TypeError('options must be an object')
  const atLeastOne = (name, label = name) => {
    if (given[name] !== undefined && given[name] !== null && given[name] < 1) throw new Error(`${label} can not be less than 1`)
  }
  atLeastOne('bailout', 'bailout threshold')
  atLeastOne('connectionRate')
  atLeastOne('overallRate', 'bailout overallRate')
  atLeastOne('amount')
  atLeastOne('maxConnectionRequests')
  atLeastOne('maxOverallRequests')
  for (const [name, why] of Object.entries(REFUSED)) {
    if (given[name]) throw new TypeError(`option '${name}' is not supported: ${why}`)
  }
  for (const name of Object.keys(given)) {
    if (!AUTOCANNON_OPTIONS.has(name) && !warned.has(name)) {
      warned.add(name)
      process.emitWarning(`option '${name}' is not an autocannon option; ignored, as autocannon ignores it`, 'PeltWarning')
    }
  }
  const o = { ...DEFAULTS, ...given }
  if (given.form && !given.method) o.method = 'POST'
  o.headers = { ...(o.headers || {}) }
  if (o.json === true) o.renderProgressBar = o.renderResultsTable = o.renderLatencyTable = false
  for (const r of o.requests || []) {
    if (!isFn(r.setupRequest)) throw new Error('Invalid option setupRequest, please provide a function (or file path when in workers mode)')
    if (!isFn(r.onResponse)) throw new Error('Invalid option onResponse, please provide a function (or file path when in workers mode)')
    if (r.onResponse) {
      throw new TypeError("option 'requests[].onResponse' is not supported: it runs JavaScript on every response to carry data into the next request, and pelt builds its requests before the run")
    }
  }
  if (!isFn(o.setupClient)) throw new Error('Invalid option setupClient, please provide a function (or file path when in workers mode)')
  if (!isFn(o.verifyBody)) throw new Error('Invalid option verifyBody, please provide a function (or file path when in workers mode)')
  o.setupClient = fnOf(o.setupClient)
  o.verifyBody = fnOf(o.verifyBody)
  if (o.expectBody && given.requests) throw new Error('expectBody cannot be used in conjunction with requests')
  const urls = [].concat(o.url || [])
  if (urls.length === 0 || urls.some(u => typeof u !== 'string' || u === '')) {
    if (!o.socketPath) throw new Error('url or socketPath option required')
  }
  o.url = Array.isArray(o.url) ? urls.map(u => (u.startsWith('http') ? u : `http://${u}`)) : (urls[0] && !urls[0].startsWith('http') ? `http://${urls[0]}` : o.url)
  if (typeof o.duration === 'string') o.duration = /[a-zA-Z]/.test(o.duration) ? seconds(o.duration) : Number(o.duration.trim())
  if (typeof o.duration !== 'number' || Number.isNaN(o.duration)) throw new Error('duration entered was in an invalid format')
  if (o.duration < 0) throw new Error('duration can not be less than 0')
  o.sampleInt = parseFloat(o.sampleInt)
  if (Number.isNaN(o.sampleInt)) throw new Error('sample interval entered was in an invalid format')
  if (o.sampleInt !== 1000) {
    throw new TypeError("option 'sampleInt' is not supported: pelt samples Req/Sec and Bytes/Sec once a second (1000)")
  }
  if (o.connections < 1) throw new Error('connections can not be less than 1')
  if (o.pipelining < 1) throw new Error('pipelining factor can not be less than 1')
  if (o.timeout < 1) throw new Error('timeout must be greater than 0')
  if (o.forever && o.workers !== undefined && o.workers > 0) throw new Error("Using `forever` option isn't currently supported with workers")
  if (o.reconnectRate && o.reconnectRate !== 1) {
    throw new TypeError("option 'reconnectRate' is not supported beyond 1: pelt keeps each connection open, or (reconnectRate 1) opens one per request")
  }
  if (o.overallRate && o.overallRate < o.connections) o.connections = o.overallRate
  if (o.amount && o.amount < o.connections) throw new Error('connections cannot be greater than amount')
  if (o.form) Object.assign(o, multipartOptions(o))
  const tls = o.tlsOptions || {}
  for (const name of Object.keys(tls)) {
    if (!['ca', 'cert', 'key', 'servername', 'rejectUnauthorized'].includes(name)) {
      throw new TypeError(`option 'tlsOptions.${name}' is not supported: pelt (rustls) takes ca, cert, key and servername`)
    }
  }
  return o
}

/** The form as the body and content type every request sends. */
function multipartOptions(o) {
  const { body, contentType } = multipart(o.form)
  return { body, headers: { ...o.headers, 'Content-Type': contentType } }
}

/**
 * The requests autocannon would send, in order, built ahead: `requests` (or one request of
 * `method`, `headers`, `body`) for each URL path, HAR entries for the URL's origin, and with
 * setupRequest, `count` of them built as a connection would build them one after another
 * (its context carried along, reset to initialContext when a setupRequest returns nothing).
 * Returns [{method, path, headers, body}] and the number of resets.
 */
function buildRequests(o, template) {
  const base = new URL([].concat(o.url)[0] || 'http://localhost/')
  let list = template || o.requests || [{}]
  if (o.har) {
    const byOrigin = harRequests(o.har)
    list = byOrigin.get(base.origin) || list
  }
  const defaults = { method: o.method, path: base.pathname + base.search, headers: o.headers, body: o.body }
  const build = (r, context) => {
    let data = { ...defaults, ...r, headers: { ...defaults.headers, ...(r.headers || {}) } }
    const setup = fnOf(r.setupRequest)
    if (setup) data = setup(data, context)
    return data
  }
  const dynamic = list.some(r => r.setupRequest)
  if (!dynamic) return { requests: list.map(r => build(r)), resets: 0 }
  const count = o.requestCount === undefined ? Math.min(o.amount || BUILT_DEFAULT, BUILT_DEFAULT) : o.requestCount
  if (!Number.isInteger(count) || count < 1 || count > 1000000) {
    throw new RangeError("option 'requestCount' must be a whole number from 1 to 1000000")
  }
  const fresh = () => structuredClone(o.initialContext || {})
  const requests = []
  let context = fresh()
  let resets = 0
  for (let i = 0; requests.length < count; i = (i + 1) % list.length) {
    if (i === 0) context = fresh()
    const data = build(list[i], context)
    if (!data) {
      if (requests.length === 0) throw new Error('First setupRequest() failed did not returned valid request. Stopping')
      resets++
      i = -1
      continue
    }
    requests.push(data)
  }
  return { requests, resets }
}

/**
 * A connection's client, as autocannon's setupClient gets it: an EventEmitter whose set*
 * calls change the requests it sends. Calls made in setupClient (before the run) shape the
 * run's requests; 'response', 'body' and 'headers' listeners get sampled responses. The
 * engine cannot take new requests mid-run: a change then is reported once, as a warning.
 */
class Client extends EventEmitter {
  constructor(opts, requests) {
    super()
    this.opts = opts
    this._requests = requests.map(r => ({ ...r }))
    this._running = false
  }

  _change(change) {
    if (this._running) {
      if (!Client.warned) {
        Client.warned = true
        process.emitWarning('pelt sends the requests set before the run; a client\'s setHeaders/setBody/setRequest(s) during it changes nothing', 'PeltWarning')
      }
      return
    }
    change()
  }

  setHeaders(headers) {
    this._change(() => { this._requests[0].headers = headers || {} })
  }

  setBody(body) {
    this._change(() => { this._requests[0].body = body })
  }

  setHeadersAndBody(headers, body) {
    this._change(() => Object.assign(this._requests[0], { headers: headers || {}, body }))
  }

  setRequest(request) {
    this._change(() => { this._requests[0] = { ...request } })
  }

  setRequests(requests) {
    this._change(() => { this._requests = requests.map(r => ({ ...r })) })
  }
}

/** Reads the TLS files autocannon's tlsOptions holds (buffers or texts) into files pelt's
 * options name; returns the options and the files' folder (removed after the run). */
function tlsFiles(o) {
  const tls = o.tlsOptions || {}
  if (!tls.ca && !tls.cert && !tls.key) return { options: {} }
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pelt-autocannon-'))
  const options = {}
  const write = (name, value) => {
    const file = path.join(dir, `${name}.pem`)
    fs.writeFileSync(file, [].concat(value).map(v => String(v)).join('\n'))
    return file
  }
  if (tls.ca) options.cacert = write('ca', tls.ca)
  if (tls.cert) options.cert = write('cert', tls.cert)
  if (tls.key) options.key = write('key', tls.key)
  return { options, dir }
}

/** autocannon's options (validated) and the requests built as pelt's run() options. */
function toPelt(o, requests) {
  const urls = [].concat(o.url)
  const origin = new URL(urls[0] || 'http://localhost/').origin
  // One request per URL path, each URL's requests in turn, as autocannon's connections take
  // the URLs in turn.
  const paths = urls.length > 1 ? urls.map(u => new URL(u).pathname + new URL(u).search) : [null]
  const targets = []
  for (const p of paths) {
    for (const r of requests) {
      const body = bodyBytes(r.body)
      const headers = {}
      for (const [k, v] of Object.entries(r.headers || {})) {
        if (k.toLowerCase() !== 'content-length') headers[k] = String(v)
      }
      const target = { method: r.method || 'GET', url: new URL(p || r.path || '/', origin).href, headers }
      if (body !== undefined) {
        let text = body.toString('utf8')
        if (o.idReplacement) text = text.split('[<id>]').join('{{uuid}}')
        if (Buffer.from(text, 'utf8').equals(body) || o.idReplacement) target.body = text
        else target.body_base64 = body.toString('base64')
      }
      targets.push(target)
    }
  }
  const https = origin.startsWith('https:')
  const run = {
    connections: o.connections,
    pipeline: o.pipelining,
    timeout: `${o.timeout}s`,
    unixSocket: o.socketPath,
    threads: o.workers || undefined,
    // autocannon never verifies the server's certificate.
    insecure: https || undefined,
    sni: https ? (o.servername || (o.tlsOptions && o.tlsOptions.servername)) : undefined,
    keepAlive: o.reconnectRate === 1 ? false : undefined,
  }
  const only = targets.length === 1 && targets[0]
  if (only && only.body_base64 === undefined) {
    Object.assign(run, { url: only.url, method: only.method, headers: only.headers, body: only.body })
  } else {
    run.targets = targets
  }
  const total = o.amount || (o.maxConnectionRequests ? o.maxConnectionRequests * o.connections : o.maxOverallRequests)
  if (total) run.requests = total
  if (!o.amount) run.duration = `${o.duration}s`
  const rate = o.connectionRate ? o.connectionRate * o.connections : o.overallRate
  if (rate) run.rate = rate
  return run
}

/** autocannon's histogram object of a list of per-second values (`total`: their sum): mean
 * and standard deviation rounded up to hundredths, min, max, and the percentiles. */
function perSecond(values, total) {
  const n = values.length
  const sorted = [...values].sort((a, b) => a - b)
  const mean = n ? values.reduce((a, b) => a + b, 0) / n : 0
  const variance = n ? values.reduce((a, v) => a + (v - mean) ** 2, 0) / n : 0
  const up = v => Math.ceil(v * 100) / 100
  const stats = { average: up(mean), mean: up(mean), stddev: up(Math.sqrt(variance)), min: n ? sorted[0] : 0, max: n ? sorted[n - 1] : 0, total }
  for (const p of PERCENTILES) {
    // HdrHistogram's rank: the value with round(p% of n) values at or below it.
    const rank = Math.max(1, Math.floor((p / 100) * n + 0.5))
    stats[key(p)] = n ? sorted[Math.min(rank, n) - 1] : 0
  }
  return stats
}

/** autocannon's latency object (milliseconds, to the microsecond where autocannon has whole
 * milliseconds) of pelt's histograms. */
function latencyOf(histograms) {
  const ms = us => us / 1000
  const s = native.latencyStats(histograms, PERCENTILES.map(p => p / 100))
  // Mean and deviation rounded up as autocannon rounds them, to the microsecond.
  const us = v => Math.ceil(v) / 1000
  const latency = { average: us(s.mean), mean: us(s.mean), stddev: us(s.stdev), min: ms(s.min), max: ms(s.max) }
  PERCENTILES.forEach((p, i) => { latency[key(p)] = ms(s.quantiles[i]) })
  latency.totalCount = s.count
  return latency
}

/** The raw (not aggregated) result of one run: autocannon's, with the latency histogram in
 * pelt's encoding (microseconds) and each second's requests and bytes as lists. */
function rawResult(r, points, extra) {
  const q = r.requests
  const classes = [0, 0, 0, 0, 0]
  const statusCodeStats = {}
  for (const [code, n] of Object.entries(r.status)) {
    const c = Math.floor(Number(code) / 100) - 1
    if (c >= 0 && c < 5) classes[c] += n
    statusCodeStats[code] = { count: n }
  }
  const start = r.started_unix_ms
  const raw = {
    latencies: r.histograms && r.histograms.latency_us ? r.histograms.latency_us : null,
    requests: points.map(p => p.completed),
    throughput: points.map(p => (p.detail ? p.detail.bytes_received : 0)),
    totalCompletedRequests: q.completed,
    totalRequests: q.sent,
    totalBytes: r.bytes.received,
    samples: points.length,
    errors: q.errors,
    timeouts: r.errors.timeout || 0,
    mismatches: 0,
    non2xx: classes[0] + classes[2] + classes[3] + classes[4],
    statusCodeStats,
    resets: extra.resets || 0,
    duration: Math.round(r.duration_s * 100) / 100,
    start: new Date(start),
    finish: new Date(start + Math.round(r.duration_s * 1000)),
  }
  classes.forEach((n, i) => { raw[`${i + 1}xx`] = n })
  return raw
}

/** autocannon's aggregateResult: one result of raw results (pelt's, from runs with
 * skipAggregateResult), their latency histograms merged exactly and their seconds pooled. */
function aggregate(results, o) {
  const sum = name => results.reduce((a, r) => a + (r[name] || 0), 0)
  const statusCodeStats = {}
  for (const r of results) {
    for (const [code, { count }] of Object.entries(r.statusCodeStats || {})) {
      statusCodeStats[code] = { count: (statusCodeStats[code] ? statusCodeStats[code].count : 0) + count }
    }
  }
  const first = results[0] || {}
  const result = {
    title: o.title,
    url: o.url,
    socketPath: o.socketPath,
    connections: o.connections,
    sampleInt: o.sampleInt,
    pipelining: o.pipelining,
    workers: o.workers,
    duration: first.duration,
    samples: sum('samples'),
    start: first.start,
    finish: first.finish,
    errors: sum('errors'),
    timeouts: sum('timeouts'),
    mismatches: sum('mismatches'),
    non2xx: sum('non2xx'),
    resets: sum('resets'),
    '1xx': sum('1xx'),
    '2xx': sum('2xx'),
    '3xx': sum('3xx'),
    '4xx': sum('4xx'),
    '5xx': sum('5xx'),
    statusCodeStats,
    latency: latencyOf(results.flatMap(r => [].concat(r.latencies || [])).filter(Boolean)),
    requests: perSecond(results.flatMap(r => r.requests || []), sum('totalCompletedRequests')),
    throughput: perSecond(results.flatMap(r => r.throughput || []), sum('totalBytes')),
  }
  result.requests.sent = sum('totalRequests')
  if (results.some(r => r.bodiesChecked !== undefined)) {
    result.bodiesChecked = sum('bodiesChecked')
    result.bodiesUnchecked = sum('bodiesUnchecked')
  }
  return result
}

/** autocannon's own aggregateResult(results, opts): throws as autocannon's does. */
function aggregateResult(results, opts = {}) {
  if (!Array.isArray(results)) throw new Error('"results" must be an array of results')
  return aggregate(results, { ...DEFAULTS, ...opts })
}

/**
 * One run: the requests built, the clients set up, the engine started. Emits the instance's
 * events and calls `done(error, result, pelt)` at the end.
 */
function runOnce(instance, o, done) {
  const groups = originGroups(o)
  if (groups.length > 1) return runOrigins(instance, o, groups, done)
  let built
  let run
  let tls
  try {
    built = buildRequests(o)
    // Each connection's client; setupClient gets them before the run, and they must agree.
    const clients = []
    let requests = built.requests
    for (let i = 0; i < o.connections; i++) clients.push(new Client(o, requests))
    if (o.setupClient) {
      const setups = []
      for (const client of clients) {
        o.setupClient(client)
        setups.push(client._requests)
      }
      const texts = setups.map(list => JSON.stringify(list, (k, v) => (v && v.type === 'Buffer' ? Buffer.from(v.data).toString('base64') : v)))
      if (texts.some(t => t !== texts[0])) {
        throw new TypeError("option 'setupClient' gave connections different requests: pelt sends the same requests on every connection")
      }
      if (setups.length) requests = buildRequests(o, setups[0]).requests
    }
    run = toPelt(o, requests)
    tls = tlsFiles(o)
    Object.assign(run, tls.options)
    instance._clients = clients
  } catch (e) {
    setImmediate(() => done(e))
    return
  }
  const clients = instance._clients
  const listened = name => clients.some(c => c.listenerCount(name) > 0)
  // verifyBody (or expectBody) checks the sampled responses: every one up to 4096 per thread
  // and second; the result says how many were checked and how many were not.
  const verify = o.verifyBody || (o.expectBody !== undefined ? body => body === String(o.expectBody) : null)
  const sampling = instance.listenerCount('response') > 0 || instance.listenerCount('reqError') > 0 ||
    listened('response') || listened('body') || listened('headers') || Boolean(verify)
  if (sampling) {
    run.sampleEvery = 1
    run.sampleResponses = true
  }
  const points = []
  let errors = 0
  const bodies = { checked: 0, mismatches: 0 }
  let handle
  try {
    handle = pelt.run(run)
  } catch (e) {
    setImmediate(() => done(e))
    return
  }
  instance._handles.push(handle)
  clients.forEach(c => { c._running = true })
  instance.emit('start')
  if (instance._stopped) handle.stop()
  handle.on('tick', point => {
    points.push(point)
    errors += point.errors
    instance.emit('tick', { counter: point.completed, bytes: point.detail ? point.detail.bytes_received : 0 })
    if (o.bailout && (errors >= o.bailout || bodies.mismatches >= o.bailout)) handle.stop()
  })
  handle.on('samples', rows => {
    for (const s of rows) {
      if (s.error) {
        const error = s.error === 'timeout' ? new Error('request timed out') : Object.assign(new Error(s.error), { code: s.error })
        instance.emit('reqError', error)
        continue
      }
      const client = clients[s.index % Math.max(clients.length, 1)]
      const response = s.response === undefined ? '' : s.response
      const bytes = Buffer.byteLength(response)
      const ms = s.latencyUs / 1000
      const parsed = verify || client.listenerCount('headers') || client.listenerCount('body') ? parseResponse(response) : null
      if (verify) {
        bodies.checked++
        if (!verify(parsed.body)) bodies.mismatches++
      }
      if (parsed) {
        client.emit('headers', { statusCode: s.status, headers: parsed.headers })
        client.emit('body', Buffer.from(parsed.body))
      }
      client.emit('response', s.status, bytes, ms)
      instance.emit('response', client, s.status, bytes, ms)
    }
  })
  handle.then(r => {
    if (tls.dir) fs.rmSync(tls.dir, { recursive: true, force: true })
    const raw = rawResult(r, points, built)
    if (verify) {
      raw.mismatches = bodies.mismatches
      // pelt's own: the responses verifyBody (or expectBody) saw, and those it did not.
      raw.bodiesChecked = bodies.checked
      raw.bodiesUnchecked = Math.max(0, r.requests.completed - bodies.checked)
    }
    done(null, raw, r)
  }, e => {
    if (tls.dir) fs.rmSync(tls.dir, { recursive: true, force: true })
    done(e)
  })
}

/** autocannon's share of `total` for connection `i` of `n`. */
const share = (total, i, n) => Math.floor(total / n) + (i + 1 <= total % n ? 1 : 0)

/**
 * The URLs grouped by origin, as autocannon's connections take them (connection i sends to
 * URL i mod n): each origin's URLs, connections, and its share of amount, overallRate and
 * maxOverallRequests (autocannon splits them by connection).
 */
function originGroups(o) {
  const urls = [].concat(o.url || [])
  if (urls.length < 2) return []
  const groups = new Map()
  for (let i = 0; i < o.connections; i++) {
    const origin = new URL(urls[i % urls.length]).origin
    if (!groups.has(origin)) {
      groups.set(origin, { urls: urls.filter(u => new URL(u).origin === origin), connections: 0, amount: 0, overallRate: 0, maxOverallRequests: 0 })
    }
    const g = groups.get(origin)
    g.connections++
    if (o.amount) g.amount += share(o.amount, i, o.connections)
    if (o.overallRate && !o.connectionRate) g.overallRate += share(o.overallRate, i, o.connections)
    if (o.maxOverallRequests && !o.amount && !o.maxConnectionRequests) g.maxOverallRequests += share(o.maxOverallRequests, i, o.connections)
  }
  return [...groups.values()]
}

/** Raw results of runs that ran side by side (one per origin) as one: their seconds added. */
function together(raws) {
  const sum = name => raws.reduce((a, r) => a + r[name], 0)
  const seconds = Math.max(...raws.map(r => r.requests.length))
  const add = name => Array.from({ length: seconds }, (_, i) => raws.reduce((a, r) => a + (r[name][i] || 0), 0))
  const statusCodeStats = {}
  for (const r of raws) {
    for (const [code, { count }] of Object.entries(r.statusCodeStats)) {
      statusCodeStats[code] = { count: (statusCodeStats[code] ? statusCodeStats[code].count : 0) + count }
    }
  }
  const raw = {
    latencies: raws.flatMap(r => [].concat(r.latencies || [])),
    requests: add('requests'),
    throughput: add('throughput'),
    statusCodeStats,
    samples: seconds,
    duration: Math.max(...raws.map(r => r.duration)),
    start: new Date(Math.min(...raws.map(r => r.start.getTime()))),
    finish: new Date(Math.max(...raws.map(r => r.finish.getTime()))),
  }
  for (const name of ['totalCompletedRequests', 'totalRequests', 'totalBytes', 'errors', 'timeouts', 'mismatches', 'non2xx', 'resets', '1xx', '2xx', '3xx', '4xx', '5xx']) {
    raw[name] = sum(name)
  }
  for (const name of ['bodiesChecked', 'bodiesUnchecked']) {
    if (raws.some(r => r[name] !== undefined)) raw[name] = raws.reduce((a, r) => a + (r[name] || 0), 0)
  }
  return raw
}

/**
 * URLs on several origins: one pelt run per origin, side by side, each with its connections
 * and its share of the requests and the rate; the instance sees one run (a tick a second with
 * their counts added, their responses) and one result (`pelt`: their results, a list).
 */
function runOrigins(instance, o, groups, done) {
  const subs = groups.map(g => {
    const sub = Object.assign(new EventEmitter(), { _handles: instance._handles })
    Object.defineProperty(sub, '_stopped', { get: () => instance._stopped })
    for (const name of ['response', 'reqError']) {
      if (instance.listenerCount(name)) sub.on(name, (...args) => instance.emit(name, ...args))
    }
    const opts = {
      ...o,
      url: g.urls.length > 1 ? g.urls : g.urls[0],
      connections: g.connections,
      amount: g.amount,
      overallRate: g.overallRate || (o.connectionRate ? 0 : o.overallRate),
      maxOverallRequests: g.maxOverallRequests || (o.amount || o.maxConnectionRequests ? 0 : o.maxOverallRequests),
    }
    return { sub, opts, ticks: [], finished: false }
  })
  // A tick for each second every run still going has reached: their counts added.
  let emitted = 0
  const flush = () => {
    const ready = Math.min(...subs.map(s => (s.finished ? Infinity : s.ticks.length)))
    const last = Math.max(...subs.map(s => s.ticks.length))
    for (; emitted < Math.min(ready, last); emitted++) {
      const at = subs.map(s => s.ticks[emitted]).filter(Boolean)
      instance.emit('tick', { counter: at.reduce((a, t) => a + t.counter, 0), bytes: at.reduce((a, t) => a + t.bytes, 0) })
    }
  }
  const raws = []
  const results = []
  let left = subs.length
  let failure = null
  subs.forEach((s, k) => {
    s.sub.once('start', () => { if (k === 0) instance.emit('start') })
    s.sub.on('tick', t => { s.ticks.push(t); flush() })
    runOnce(s.sub, s.opts, (e, raw, r) => {
      s.finished = true
      if (e) failure = failure || e
      else [raws[k], results[k]] = [raw, r]
      flush()
      if (--left > 0) return
      if (failure) return done(failure)
      done(null, together(raws), results)
    })
  })
}

/** Runs `o` (with its warm-up first, if any) and calls `cb(error, result)`. */
function runJob(instance, o, cb) {
  const finish = (e, raw, r, warmup) => {
    if (e) return cb(e)
    const result = o.skipAggregateResult ? raw : aggregate([raw], o)
    Object.defineProperty(result, 'pelt', { value: r, enumerable: false })
    if (warmup) result.warmup = warmup
    cb(null, result)
  }
  if (!o.warmup) return runOnce(instance, o, finish)
  const w = { ...o, ...o.warmup, warmup: undefined, skipAggregateResult: false }
  runOnce(Object.assign(new EventEmitter(), { _handles: instance._handles }), w, (e, raw, r) => {
    if (e) return cb(e)
    const warmup = aggregate([raw], w)
    runOnce(instance, o, (e2, raw2, r2) => finish(e2, raw2, r2, warmup))
  })
}

/**
 * autocannon(opts[, cb]) on pelt's engine: returns autocannon's instance, an EventEmitter
 * (start, tick {counter, bytes}, done, response and reqError for sampled requests, error)
 * with stop(); without a callback, also a promise of the result.
 */
function autocannon(opts, cb) {
  const instance = new EventEmitter()
  const callback = typeof cb === 'function' ? cb : null
  let settle
  if (!callback && !(opts && opts.forever)) {
    const promise = new Promise((resolve, reject) => { settle = (e, r) => (e ? reject(e) : resolve(r)) })
    instance.then = promise.then.bind(promise)
    instance.catch = promise.catch.bind(promise)
  }
  const report = (e, result) => {
    if (e) {
      if (callback) callback(e)
      else if (settle) settle(e)
      else setImmediate(() => instance.emit('error', e))
      return
    }
    instance.emit('done', result)
    if (callback) callback(null, result)
    else if (settle) settle(null, result)
    if (o && o.json) console.log(JSON.stringify(result))
  }
  instance._handles = []
  instance.stop = () => {
    instance._stopped = true
    for (const handle of instance._handles) handle.stop()
  }
  let o
  try {
    o = validate(opts || {})
    if (o.forever && callback) {
      throw new Error('should not use the callback parameter when the `forever` option is set to true. Use the `done` event on this event emitter')
    }
  } catch (e) {
    report(e)
    return instance
  }
  instance.opts = o
  const round = () => runJob(instance, o, (e, result) => {
    if (e || !o.forever) return report(e, result)
    instance.emit('done', result)
    if (!instance._stopped) setImmediate(round)
  })
  // As autocannon: listeners added right after the call see 'start'.
  setImmediate(round)
  if (o[Symbol.for('internal')] && (!o.json || !process.stdout.isTTY)) track(instance, o)
  return instance
}

/** pretty-bytes' format (autocannon's Bytes/Sec): three significant digits, SI units. */
function prettyBytes(n) {
  if (!Number.isFinite(n)) return String(n)
  if (n < 1) return `${n} B`
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB']
  const e = Math.min(Math.floor(Math.log10(n) / 3), units.length - 1)
  return `${Number((n / 1000 ** e).toPrecision(3))} ${units[e]}`
}

/** autocannon's count format: 251k. */
const count = n => (n < 1000 ? `${n}` : `${Math.round(n / 1000)}k`)

/** A table drawn as cli-table3 draws autocannon's (box characters, one space of padding,
 * a rule between rows). */
function table(head, rows) {
  const all = [head, ...rows].map(r => r.map(String))
  const widths = head.map((_, i) => Math.max(...all.map(r => r[i].length)) + 2)
  const rule = (l, m, r) => l + widths.map(w => '─'.repeat(w)).join(m) + r
  const line = r => '│' + r.map((c, i) => ` ${c}`.padEnd(widths[i])).join('│') + '│'
  const out = [rule('┌', '┬', '┐')]
  all.forEach((r, i) => {
    if (i > 0) out.push(rule('├', '┼', '┤'))
    out.push(line(r))
  })
  out.push(rule('└', '┴', '┘'))
  return out.join('\n')
}

/** autocannon.printResult(result[, opts]): the result tables as text. */
function printResult(result, opts = {}) {
  opts = { renderResultsTable: true, renderLatencyTable: false, verbose: true, ...opts }
  const out = []
  const log = s => out.push(s)
  const two = v => Math.floor(v * 100) / 100
  if (opts.verbose) {
    const l = result.latency
    log('\n' + table(['Stat', '2.5%', '50%', '97.5%', '99%', 'Avg', 'Stdev', 'Max'],
      [['Latency', ...[l.p2_5, l.p50, l.p97_5, l.p99, l.average, l.stddev, two(l.max)].map(v => `${v} ms`)]]))
    const n = v => v.toLocaleString(undefined, { maximumFractionDigits: 20 })
    const q = result.requests
    const t = result.throughput
    log(table(['Stat', '1%', '2.5%', '50%', '97.5%', 'Avg', 'Stdev', 'Min'], [
      ['Req/Sec', ...[q.p1, q.p2_5, q.p50, q.p97_5, q.average, q.stddev, two(q.min)].map(n)],
      ['Bytes/Sec', ...[t.p1, t.p2_5, t.p50, t.p97_5, t.average, t.stddev, t.min].map(prettyBytes)],
    ]))
    if (opts.renderStatusCodes === true) {
      log(table(['Code', 'Count'], Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])))
    }
    log('')
    log(result.sampleInt === 1000 ? 'Req/Bytes counts sampled once per second.' : `Req/Bytes counts sampled every ${result.sampleInt / 1000} seconds.`)
    log(`# of samples: ${result.samples}`)
    log('')
    if (opts.renderLatencyTable) {
      log(table(['Percentile', 'Latency (ms)'], PERCENTILES.map(p => [`${p}`, result.latency[key(p)]])))
      log('')
    }
  }
  if (result.non2xx) log(`${result['2xx']} 2xx responses, ${result.non2xx} non 2xx responses`)
  log(`${count(result.requests.sent)} requests in ${result.duration}s, ${prettyBytes(result.throughput.total)} read`)
  if (result.errors) log(`${count(result.errors)} errors (${count(result.timeouts)} timeouts)`)
  if (result.mismatches) log(`${count(result.mismatches)} requests with mismatched body`)
  if (result.resets) log(`request pipeline was reset ${count(result.resets)} ${result.resets === 1 ? 'time' : 'times'}`)
  return out.join('\n') + '\n'
}

/**
 * autocannon.track(instance[, opts]): writes what the run is doing to `outputStream`
 * (standard error): the "Running ..." lines at the start, a progress bar on a terminal, and
 * the result tables at the end.
 */
function track(instance, opts = {}) {
  if (!instance) throw new Error('instance required for tracking')
  opts = { outputStream: process.stderr, renderProgressBar: true, renderResultsTable: true, renderLatencyTable: false, ...opts }
  const stream = opts.outputStream
  let ticks = 0
  instance.on('start', () => {
    const o = instance.opts
    if (!o || !opts.renderProgressBar) return
    let msg = `${o.connections} connections`
    if (o.pipelining > 1) msg += ` with ${o.pipelining} pipelining factor`
    if (o.workers) msg += `\n${o.workers} workers`
    const what = o.warmupRunning ? 'warmup' : 'test'
    const socket = o.socketPath ? ` (${o.socketPath})` : ''
    stream.write(`${o.amount ? `Running ${o.amount} requests` : `Running ${o.duration}s`} ${what} @ ${o.url}${socket}\n${msg}\n\n`)
  })
  let done = 0
  instance.on('tick', t => {
    ticks++
    done += t.counter
    const o = instance.opts
    if (!opts.renderProgressBar || !stream.isTTY || !o) return
    const share = Math.min(1, o.amount ? done / o.amount : ticks / Math.max(o.duration, 1))
    const bar = '='.repeat(Math.round(share * 20)).padEnd(20)
    stream.write(`\rrunning [${bar}] ${Math.round(share * 100)}%`)
  })
  instance.on('done', result => {
    if (opts.renderProgressBar && stream.isTTY) stream.write('\r\x1b[K')
    if (opts.renderResultsTable === false) return
    stream.write(printResult(result, opts))
  })
  return instance
}

module.exports = autocannon
module.exports.track = track
module.exports.printResult = printResult
module.exports.aggregateResult = aggregateResult
module.exports.AUTOCANNON_OPTIONS = AUTOCANNON_OPTIONS
module.exports.REFUSED = REFUSED
module.exports.prettyBytes = prettyBytes
