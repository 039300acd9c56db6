'use strict'
// loadtest 8's API on pelt: `const {loadTest, startServer} = require('pelt/loadtest')`, or
// `import {loadTest, startServer} from 'pelt/loadtest'` (loadtest.mjs).
//
// loadTest() reads loadtest's options as loadtest does (its aliases, bodies, files, header
// forms), turns them into pelt's run() options and the result into loadtest's Result.
// JavaScript that loadtest runs per request (indexParamCallback, a body function from
// postFile, requestGenerator) runs here before the run, building the requests it sends; the
// engine never calls JavaScript per request. startServer() is pelt's built-in server, or,
// with the options that call JavaScript per request (logger, shouldErrorCustom) or serve a
// given body, a Node.js server like loadtest's own.

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const pelt = require('./pelt.js')
const native = require('./index.js')
const { parseResponse } = require('./response.js')
const { version } = require('./package.json')

/** loadtest's default port for its test server. */
const DEFAULT_PORT = 7357

/** The options loadtest's loadTest() reads. */
const LOADTEST_OPTIONS = new Set([
  'url', 'maxRequests', 'maxSeconds', 'concurrency', 'requestsPerSecond', 'rps', 'method',
  'body', 'data', 'postBody', 'postFile', 'putFile', 'patchBody', 'patchFile', 'contentType',
  'headers', 'cookies', 'index', 'indexParam', 'indexParamLiteral', 'indexParamCallback',
  'insecure', 'agentKeepAlive', 'keepalive', 'agent', 'timeout', 'quiet', 'statusCallback',
  'requestGenerator', 'key', 'cert', 'tcp', 'recover', 'secureProtocol',
  // pelt's own: the requests built ahead, statusCallback's sampling, and the command line's
  // --cores (pelt's threads).
  'requestGeneratorCount', 'statusSampleEvery', 'cores',
])

/** loadtest options pelt cannot honour, and why. */
const REFUSED = {
  proxy: 'pelt connects to the target itself and has no HTTP proxy support',
  contentInspector: 'pelt does not hand response bodies to JavaScript yet',
}

/** loadtest's secureProtocol (an OpenSSL method name) as pelt's TLS version: rustls speaks
 * TLS 1.2 and 1.3 only. */
const SECURE_PROTOCOLS = {
  TLS_method: undefined,
  SSLv23_method: undefined,
  TLS_client_method: undefined,
  SSLv23_client_method: undefined,
  TLSv1_2_method: '1.2',
  TLSv1_2_client_method: '1.2',
  TLSv1_3_method: '1.3',
  TLSv1_3_client_method: '1.3',
}

/** The TLS version of loadtest's secureProtocol on an https URL (it means nothing on http). */
function tlsVersion(secureProtocol, url) {
  if (secureProtocol === undefined || !url.startsWith('https:')) return undefined
  if (!(secureProtocol in SECURE_PROTOCOLS)) {
    throw new TypeError(`option 'secureProtocol' ${secureProtocol} is not supported: pelt (rustls) speaks TLS 1.2 and 1.3 only (TLSv1_2_method, TLSv1_3_method, or TLS_method for either)`)
  }
  return SECURE_PROTOCOLS[secureProtocol]
}

/** loadtest's methods. */
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']

/** How many requests are built ahead by per-request JavaScript when not told. */
const GENERATED_DEFAULT = 1000

/** Names warned about once each: options loadtest itself ignores. */
const warned = new Set()

/** loadtest's header forms: an object, 'key:value', or an array of 'key:value' texts. Keys
 * are lower-cased, as loadtest's. */
function addHeaders(raw, headers) {
  const add = text => {
    const at = String(text).indexOf(':')
    if (at < 0) throw new TypeError(`header '${text}' must be in the form key:value`)
    headers[text.slice(0, at).trim().toLowerCase()] = text.slice(at + 1).trim()
  }
  if (Array.isArray(raw)) raw.forEach(add)
  else if (typeof raw === 'string') add(raw)
  else if (raw && typeof raw === 'object') {
    for (const [k, v] of Object.entries(raw)) headers[k.toLowerCase()] = String(v)
  } else if (raw !== undefined) throw new TypeError("option 'headers' must be an object, a 'key:value' text or an array of them")
}

/** A body file as loadtest reads it: a .js module's default export (a value or a function of
 * the request's index), else the file's text. */
async function readBody(file) {
  if (typeof file !== 'string') throw new TypeError(`invalid file to open for body: ${file}`)
  if (path.extname(file) === '.js') {
    const module = await import(pathToFileURL(path.resolve(file)).href)
    return 'default' in module ? module.default : module
  }
  return fs.readFileSync(file, 'utf8')
}

/** A requestGenerator given as a module path: its default export (or the module, if a
 * function). */
async function importGenerator(file) {
  const module = await import(pathToFileURL(path.resolve(file)).href)
  if (typeof module === 'function') return module
  if (typeof module.default === 'function') return module.default
  throw new TypeError(`requestGenerator module '${file}' exports no function`)
}

/** What loadtest's configuration file may say (its `loadConfig`), by name. */
const CONFIG_OPTIONS = new Set([
  'maxRequests', 'concurrency', 'maxSeconds', 'timeout', 'method', 'contentType', 'body', 'file',
  'cookies', 'headers', 'secureProtocol', 'insecure', 'cert', 'key', 'requestGenerator',
  'recover', 'agentKeepAlive', 'proxy', 'requestsPerSecond', 'indexParam',
  // The test server's; loadTest() leaves them.
  'delay', 'error', 'percent',
])

/**
 * loadtest's configuration file, as its README describes it: `.loadtestrc` in the working
 * directory, or the file the `loadtest` entry of its `package.json` names; JSON. Returns the
 * options it gives (only those it names; cookies as an object become `name=value` texts) and
 * its body `file`, or nothing without one.
 */
function loadConfig(dir = process.cwd()) {
  let file = path.join(dir, '.loadtestrc')
  if (!fs.existsSync(file)) {
    const pkg = path.join(dir, 'package.json')
    let named
    try {
      named = JSON.parse(fs.readFileSync(pkg, 'utf8')).loadtest
    } catch {
      // No package.json here, or not one to read: no configuration.
    }
    if (typeof named !== 'string') return { options: {} }
    file = path.resolve(dir, named)
  }
  let config
  try {
    config = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (e) {
    throw new TypeError(`loadtest configuration ${file}: ${e.message} (pelt reads it as JSON)`)
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`loadtest configuration ${file} must hold a JSON object`)
  }
  const options = {}
  let bodyFile
  for (const [name, value] of Object.entries(config)) {
    if (!CONFIG_OPTIONS.has(name)) throw new TypeError(`loadtest configuration ${file}: unknown option '${name}'`)
    if (['delay', 'error', 'percent'].includes(name)) continue
    if (name === 'cookies' && value && typeof value === 'object' && !Array.isArray(value)) {
      options.cookies = Object.entries(value).map(([k, v]) => `${k}=${v}`)
    } else if (name === 'file') {
      bodyFile = value
    } else {
      options[name] = value
    }
  }
  return { options, bodyFile }
}

/** loadtest's options, read as loadtest's Options class reads them: what `options` leaves out
 * comes from the configuration file, if there is one. */
async function readOptions(given) {
  if (given === null || typeof given !== 'object') throw new TypeError('options must be an object')
  const config = loadConfig()
  const options = config.options
  for (const [name, value] of Object.entries(given)) {
    if (value !== undefined) options[name] = value
  }
  for (const name of Object.keys(options)) {
    if (REFUSED[name] && options[name] !== undefined) throw new TypeError(`option '${name}' is not supported: ${REFUSED[name]}`)
    if (!LOADTEST_OPTIONS.has(name) && !REFUSED[name] && !warned.has(name)) {
      warned.add(name)
      process.emitWarning(`option '${name}' is not a loadtest option; ignored, as loadtest ignores it`, 'PeltWarning')
    }
  }
  for (const name of ['statusCallback', 'indexParamCallback']) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`option '${name}' must be a function`)
  }
  const url = options.url
  if (!url) throw new TypeError('Missing URL in options')
  if (typeof url !== 'string' || !/^(https?|wss?):\/\//.test(url)) {
    throw new TypeError(`Invalid URL ${url}, must be http://, https://, ws://, or wss://`)
  }
  const o = {
    url,
    concurrency: options.concurrency || 10,
    requestsPerSecond: options.requestsPerSecond || (options.rps ? parseFloat(options.rps) : undefined),
    agentKeepAlive: Boolean(options.keepalive || options.agent || options.agentKeepAlive),
    indexParam: options.index || options.indexParam,
    indexParamLiteral: options.indexParamLiteral,
    indexParamCallback: options.indexParamCallback,
    method: options.method || 'GET',
    maxRequests: options.maxRequests,
    maxSeconds: options.maxSeconds,
    contentType: options.contentType,
    timeout: options.timeout,
    insecure: options.insecure,
    key: options.key,
    cert: options.cert,
    tlsVersion: tlsVersion(options.secureProtocol, url),
    quiet: options.quiet,
    statusCallback: options.statusCallback,
    statusSampleEvery: options.statusSampleEvery,
    requestGenerator: options.requestGenerator,
    requestGeneratorCount: options.requestGeneratorCount,
    cores: options.cores,
  }
  // The configuration's body file, unless a body is given (the method stays).
  let bodyFile = options.body ? undefined : config.bodyFile
  if (options.data) o.body = options.data
  if (options.body) o.body = options.body
  if (options.postBody) [o.method, o.body] = ['POST', options.postBody]
  if (options.postFile) [o.method, bodyFile] = ['POST', options.postFile]
  if (options.putFile) [o.method, bodyFile] = ['PUT', options.putFile]
  if (options.patchBody) [o.method, o.body] = ['PATCH', options.patchBody]
  if (options.patchFile) [o.method, bodyFile] = ['PATCH', options.patchFile]
  if (/^wss?:/.test(url)) {
    // loadtest's WebSocket client: each request a message on a socket it keeps, the next
    // sent when the reply comes; its message is {"some":"message"} unless a body is given.
    o.method = 'GET'
    o.agentKeepAlive = true
    if (o.body === undefined && bodyFile === undefined) o.body = { some: 'message' }
  }
  if (!METHODS.includes(String(o.method).toUpperCase())) throw new TypeError(`Invalid method ${o.method}`)
  o.method = String(o.method).toUpperCase()
  if (typeof o.requestGenerator === 'string') o.requestGenerator = await importGenerator(o.requestGenerator)
  else if (o.requestGenerator !== undefined && typeof o.requestGenerator !== 'function') {
    throw new TypeError("option 'requestGenerator' must be a function or a module path")
  }
  if (bodyFile !== undefined) o.body = await readBody(bodyFile)
  o.headers = { host: new URL(url).host, accept: '*/*' }
  addHeaders(options.headers, o.headers)
  if (o.body !== undefined && o.body !== '') o.headers['content-type'] = o.contentType || 'text/plain'
  const cookies = options.cookies
  if (Array.isArray(cookies)) o.headers.cookie = cookies.join('; ')
  else if (typeof cookies === 'string') o.headers.cookie = cookies
  else if (cookies !== undefined) throw new TypeError(`Invalid cookies ${JSON.stringify(cookies)}, please use an array or a string`)
  if (!o.headers['user-agent']) o.headers['user-agent'] = `pelt/${version} (loadtest)`
  if (!o.maxRequests && !o.maxSeconds) o.maxSeconds = 10
  return o
}

/** A body value as the text sent: objects as JSON (or a form, with that content type). */
function bodyText(body, o) {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'object') {
    if (o.contentType === 'application/x-www-form-urlencoded') return new URLSearchParams(body).toString()
    return JSON.stringify(body)
  }
  return String(body)
}

/** The index finder: loadtest's indexParam (a pattern) or indexParamLiteral. */
function finder(o) {
  if (o.indexParamLiteral) return text => (index => text.split(o.indexParamLiteral).join(index))
  if (o.indexParam) {
    const pattern = o.indexParam instanceof RegExp ? o.indexParam : new RegExp(o.indexParam, 'g')
    return text => (index => text.replace(pattern, index))
  }
  return null
}

/** Whether loadtest would run JavaScript for every request: then the requests are built
 * ahead (`count` of them, sent in turn). */
function perRequest(o) {
  return Boolean(o.requestGenerator || o.indexParamCallback || typeof o.body === 'function')
}

/**
 * Builds `count` requests ahead as loadtest would build them one by one: the index from
 * indexParamCallback (or the request's number), the body from a body function, and
 * requestGenerator(options, params, client, callback) called with a client that records the
 * request instead of sending it. Returns pelt targets.
 */
function generated(o, count, labels) {
  const base = new URL(o.url)
  const find = finder(o)
  const targets = []
  for (let i = 0; i < count; i++) {
    const index = o.indexParamCallback ? o.indexParamCallback() : i
    const replace = find ? text => find(text)(String(index)) : text => text
    let body = typeof o.body === 'function' ? o.body(i) : o.body
    body = bodyText(body, o)
    if (body !== undefined) body = replace(body)
    const params = {
      protocol: base.protocol,
      hostname: base.hostname,
      host: base.host,
      port: base.port,
      path: replace(base.pathname + base.search),
      method: o.method,
      headers: { ...o.headers },
    }
    const chunks = []
    let sent = params
    if (o.requestGenerator) {
      const client = (p, _callback) => {
        sent = p
        const request = {
          write: chunk => { if (chunk !== undefined) chunks.push(String(chunk)) },
          end: chunk => { if (chunk !== undefined && typeof chunk !== 'function') chunks.push(String(chunk)) },
          setHeader: (k, v) => { p.headers = p.headers || {}; p.headers[k] = v },
          on: () => request,
          once: () => request,
          setTimeout: () => request,
        }
        return request
      }
      const request = o.requestGenerator(o, params, client, () => {})
      // loadtest hands a request's `labels` to statusCallback.
      if (request && request.labels !== undefined) labels[i] = request.labels
    }
    const p = sent
    const target = new URL(p.path || '/', `${p.protocol || base.protocol}//${p.host || base.host}`)
    if (p.hostname && p.port) target.host = `${p.hostname}:${p.port}`
    const headers = {}
    for (const [k, v] of Object.entries(p.headers || {})) {
      // pelt writes Host and Content-Length from the URL and the body.
      if (!['content-length', 'host'].includes(k.toLowerCase())) headers[k] = String(v)
    }
    targets.push({
      method: p.method || o.method,
      url: target.href,
      headers,
      body: chunks.join('') || body || undefined,
    })
  }
  return targets
}

/** loadtest's options (read) as pelt's run() options. */
function toPelt(o) {
  const headers = {}
  for (const [k, v] of Object.entries(o.headers)) if (k !== 'host') headers[k] = v
  const find = finder(o)
  const seq = text => (find && text !== undefined ? find(text)('{{seq}}') : text)
  const run = {
    url: seq(o.url),
    connections: o.concurrency,
    method: o.method,
    headers,
    body: seq(bodyText(o.body, o)),
    insecure: o.insecure || undefined,
    keepAlive: o.agentKeepAlive,
    cert: o.cert,
    key: o.key,
    tlsVersion: o.tlsVersion,
  }
  if (perRequest(o)) {
    let count = o.requestGeneratorCount
    if (count === undefined) count = Math.min(o.maxRequests || GENERATED_DEFAULT, GENERATED_DEFAULT)
    if (!Number.isInteger(count) || count < 1 || count > 1000000) {
      throw new RangeError("option 'requestGeneratorCount' must be a whole number from 1 to 1000000")
    }
    // The generated requests' labels ride beside the options, not in them.
    Object.defineProperty(run, 'labels', { value: [], enumerable: false })
    run.targets = generated(o, count, run.labels)
    delete run.url
    delete run.method
    delete run.body
    run.headers = {}
  }
  // statusCallback: every N-th request that ends (per thread; 1, the default: every one up
  // to 4096 per thread and second), handed over once a second.
  if (o.statusCallback) {
    run.sampleEvery = o.statusSampleEvery || 1
    run.sampleResponses = true
  }
  if (o.maxRequests) run.requests = o.maxRequests
  if (o.maxSeconds) run.duration = o.maxSeconds
  if (o.requestsPerSecond) run.rate = o.requestsPerSecond
  if (o.cores) run.threads = Math.max(1, Math.floor(o.cores))
  // loadtest: milliseconds, 0 (the default) for none; pelt: a duration, at most a year.
  run.timeout = o.timeout ? `${o.timeout}ms` : '8760h'
  return run
}

const round2 = v => Math.round(v * 100) / 100

/** A loadtest Result of pelt's result (`r`). */
class LoadtestResult {
  constructor(o, r) {
    const q = r.requests
    const latency = r.latency_us
    const failed = Object.entries(r.status).filter(([code]) => Number(code) >= 400)
    const errorCodes = {}
    for (const [code, n] of failed) errorCodes[code] = n
    // loadtest keys every failure without a response (refused, reset, timeout...) as -1;
    // pelt's kinds are in result.pelt.errors.
    if (q.errors > 0) errorCodes['-1'] = q.errors
    let p95 = latency.p90
    if (r.histograms && r.histograms.latency_us && q.completed > 0) {
      p95 = native.latencyStats([r.histograms.latency_us], [0.95]).quantiles[0]
    }
    this.url = o.url
    this.maxRequests = o.maxRequests
    this.maxSeconds = o.maxSeconds || 0
    this.concurrency = o.concurrency
    this.agent = o.agentKeepAlive ? 'keepalive' : 'none'
    this.requestsPerSecond = o.requestsPerSecond
    this.clients = r.connections
    if (o.cores) this.cores = o.cores
    /** Requests that ended: responses and errors (pelt never sends more than maxRequests). */
    this.totalRequests = q.completed + q.errors
    /** Transport errors plus responses with a status of 400 or more (as loadtest counts). */
    this.totalErrors = q.errors + failed.reduce((sum, [, n]) => sum + n, 0)
    // Milliseconds, as loadtest measures it.
    this.elapsedSeconds = Math.round(r.duration_s * 1000) / 1000
    this.totalTimeSeconds = this.elapsedSeconds
    this.effectiveRps = Math.round(this.totalRequests / Math.max(r.duration_s, 1e-9))
    this.rps = this.effectiveRps
    this.meanLatencyMs = round2(latency.mean / 1000)
    this.minLatencyMs = round2(latency.min / 1000)
    this.maxLatencyMs = round2(latency.max / 1000)
    this.percentiles = {
      50: round2(latency.p50 / 1000),
      90: round2(latency.p90 / 1000),
      95: round2(p95 / 1000),
      99: round2(latency.p99 / 1000),
    }
    this.errorCodes = errorCodes
    /** pelt's own result (the --json document), for everything loadtest does not have. */
    Object.defineProperty(this, 'pelt', { value: r, enumerable: false })
  }

  /** Prints the result as loadtest does. */
  show() {
    const log = console.info
    log('')
    log('Target URL:          %s', this.url)
    if (this.maxRequests) log('Max requests:        %s', this.maxRequests)
    else if (this.maxSeconds) log('Max time (s):        %s', this.maxSeconds)
    if (this.requestsPerSecond) log('Target rps:          %s', this.requestsPerSecond)
    log('Concurrent clients:  %s', this.clients)
    if (this.cores) log('Running on cores:    %s', this.cores)
    log('Agent:               %s', this.agent)
    log('')
    log('Completed requests:  %s', this.totalRequests)
    log('Total errors:        %s', this.totalErrors)
    log('Total time:          %s s', this.elapsedSeconds)
    log('Mean latency:        %s ms', this.meanLatencyMs)
    log('Effective rps:       %s', this.effectiveRps)
    log('')
    log('Percentage of requests served within a certain time')
    for (const [p, ms] of Object.entries(this.percentiles)) log('  %s%      %s ms', p, ms)
    log(' 100%      %s ms (longest request)', this.maxLatencyMs)
    if (this.totalErrors) {
      log('')
      for (const [code, n] of Object.entries(this.errorCodes)) {
        const padding = ' '.repeat(code.length < 4 ? 4 - code.length : 1)
        log(' %s%s:   %s errors', padding, code, n)
      }
    }
  }
}


/** Each loadTest() call's index (loadtest's `instanceIndex`). */
let instances = 0

/** What statusCallback's result says of sampled request `index` of entry `target`. */
function describer(run) {
  if (run.targets) {
    const parsed = run.targets.map(t => [new URL(t.url), t.method || 'GET'])
    return (index, target) => {
      const [u, method] = parsed[target] || parsed[0]
      return { host: u.hostname, path: u.pathname + u.search, method }
    }
  }
  const u = new URL(run.url.split('{{seq}}').join('0'))
  const path = new URL(run.url).pathname + new URL(run.url).search
  return index => ({
    host: u.hostname,
    path: decodeURI(path).split('{{seq}}').join(String(index)),
    method: run.method || 'GET',
  })
}

/**
 * loadtest 8's loadTest(options[, callback]) on pelt's engine: resolves to a loadtest Result
 * (totalRequests, totalErrors, rps, meanLatencyMs, percentiles, errorCodes, show(), ...).
 * statusCallback(error, result) gets sampled requests once a second, never on the engine's
 * path; statusCallbackDropped counts those left out.
 */
function loadTest(options, callback) {
  const promise = (async () => {
    const o = await readOptions(options)
    const run = toPelt(o)
    const instanceIndex = instances++
    const handle = pelt.run(run)
    let dropped = 0
    let failure = null
    if (o.statusCallback) {
      const describe = describer(run)
      handle.on('tick', p => { dropped += p.samples_dropped || 0 })
      handle.on('samples', rows => {
        for (const s of rows) {
          const result = {
            ...describe(s.index, s.target),
            statusCode: s.error ? undefined : s.status,
            ...(s.response === undefined ? {} : parseResponse(s.response)),
            requestElapsed: s.latencyUs / 1000,
            requestIndex: s.index,
            instanceIndex,
          }
          if (run.labels && run.labels[s.target] !== undefined) result.labels = run.labels[s.target]
          let error = null
          if (s.error) error = Object.assign(new Error(s.error), { code: s.error })
          else if (s.status >= 400) error = new Error(`Status code ${s.status}`)
          try {
            o.statusCallback(error, result)
          } catch (e) {
            failure = failure || e
          }
        }
      })
    }
    const r = await handle
    if (failure) throw failure
    const result = new LoadtestResult(o, r)
    if (o.statusCallback) result.statusCallbackDropped = dropped
    return result
  })()
  if (typeof callback !== 'function') return promise
  promise.then(result => callback(null, result), error => callback(error))
  return undefined
}

/** The server options loadtest's startServer() reads. */
const SERVER_OPTIONS = new Set(['port', 'delay', 'error', 'percent', 'quiet', 'logger', 'shouldErrorCustom', 'body', 'file'])

/** loadtest's server options as `pelt serve`'s. */
function serveOptions(options) {
  // loadtest's server also echoes WebSocket messages, on any path.
  const serve = { port: options.port === undefined ? DEFAULT_PORT : options.port, ws: true }
  if (options.delay) serve.delay = `${options.delay}ms`
  if (options.error !== undefined || options.percent !== undefined) {
    const share = options.percent === undefined ? 1 : options.percent / 100
    if (options.error === undefined || options.error === 500) {
      serve.errorRate = share
    } else if (share === 1) {
      serve.status = options.error
    } else {
      return null
    }
  }
  return serve
}

/**
 * loadtest's test server in Node.js, for what pelt's server does not do: JavaScript per
 * request (`logger(request, response)`, `shouldErrorCustom(request)`, both with the request's
 * `body`), a given `body` or `file`, any error status for a share of requests. Answers as
 * loadtest's does: after `delay` ms, `error` (500) for `percent` % or when shouldErrorCustom
 * says so, else the body ('OK').
 */
function nodeServer(options, count) {
  const body = options.file ? fs.readFileSync(options.file) : options.body || 'OK'
  const server = http.createServer((request, response) => {
    const chunks = []
    request.on('data', c => chunks.push(c))
    request.on('error', () => response.end())
    request.on('end', () => {
      request.body = Buffer.concat(chunks).toString()
      count()
      const answer = () => {
        const share = options.percent === undefined ? (options.error ? 1 : 0) : options.percent / 100
        const custom = options.shouldErrorCustom ? options.shouldErrorCustom(request) : false
        if (custom || Math.random() < share) {
          response.writeHead(options.error || 500)
          response.end('ERROR')
        } else {
          response.end(body)
        }
        if (options.logger) options.logger(request, response)
      }
      if (options.delay) setTimeout(answer, options.delay).unref()
      else answer()
    })
  })
  return server
}

/** The Node.js server with the handle startServer() gives: url, port, served, close(). */
function listenNode(options, callback) {
  let served = 0
  const server = nodeServer(options, () => served++)
  const handle = {
    url: '',
    port: 0,
    get served() {
      return served
    },
    close(cb) {
      server.closeAllConnections?.()
      if (typeof cb === 'function') {
        server.close(cb)
        return undefined
      }
      return new Promise((resolve, reject) => server.close(e => (e ? reject(e) : resolve())))
    },
  }
  server.once('error', e => callback(e))
  server.listen(options.port === undefined ? DEFAULT_PORT : options.port, () => {
    handle.port = server.address().port
    handle.url = `http://localhost:${handle.port}/`
    if (!options.quiet) console.info(`Listening on ${handle.url}`)
    callback(null, handle)
  })
  return handle
}

/**
 * loadtest's startServer({port, delay, error, percent, quiet, logger, shouldErrorCustom, body,
 * file}): pelt's built-in server where it can serve them, else a Node.js server like
 * loadtest's. Resolves to {url, port, served, close()}; with a callback, loadtest's legacy
 * form: returns the server at once and calls back (error, server) when it listens.
 */
function startServer(options = {}, callback) {
  for (const name of Object.keys(options)) {
    if (!SERVER_OPTIONS.has(name)) throw new TypeError(`unknown option '${name}'`)
  }
  const serve = serveOptions(options)
  const inNode = serve === null || options.logger || options.shouldErrorCustom || options.body || options.file
  if (typeof callback !== 'function') {
    return new Promise((resolve, reject) => {
      if (inNode) listenNode(options, (e, s) => (e ? reject(e) : resolve(s)))
      else resolve(pelt.serverNow(serve))
    })
  }
  if (inNode) return listenNode(options, callback)
  try {
    const server = pelt.serverNow(serve)
    setImmediate(() => callback(null, server))
    return server
  } catch (e) {
    setImmediate(() => callback(e))
    return undefined
  }
}

module.exports = { loadTest, startServer, LoadtestResult, LOADTEST_OPTIONS, SERVER_OPTIONS }
