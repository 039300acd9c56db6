'use strict'
// One load through one Node.js API, for bench/node_api.py: prints {"requests": N, "seconds": S,
// "cpu_us": C}.
//   node drive.js MODE URL REQUESTS CONNECTIONS
// MODE: run (pelt's run()), pelt-loadtest (pelt's loadTest()), loadtest (loadtest 8's
// own loadTest()), autocannon (autocannon's API), pelt-autocannon (autocannon's API on pelt);
// pelt-loadtest-status and loadtest-status: the same with a statusCallback that counts its
// calls, autocannon-verify and pelt-autocannon-verify with a verifyBody that does (what a
// per-request callback costs).
// One thread for pelt, keep-alive for all.
const path = require('node:path')
const [mode, url, requests, connections] = process.argv.slice(2)
const n = Number(requests)
const c = Number(connections)
const peers = path.join(__dirname, 'node_modules')

/** Calls of the -status modes' statusCallback. */
let calls = 0

/** The -status modes' option: a statusCallback that counts its calls. */
function status(mode) {
  return mode.endsWith('-status') ? { statusCallback: () => { calls++ } } : {}
}

async function main() {
  const started = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  let done
  if (mode === 'run') {
    const { run } = require('../../bindings/node/pelt.js')
    const r = await run({ url, requests: n, connections: c, threads: 1 })
    done = r.requests.completed
  } else if (mode === 'pelt-loadtest' || mode === 'pelt-loadtest-status') {
    const { loadTest } = require('../../bindings/node/loadtest.js')
    const r = await loadTest({ url, maxRequests: n, concurrency: c, agentKeepAlive: true, ...status(mode) })
    done = r.totalRequests
  } else if (mode === 'loadtest' || mode === 'loadtest-status') {
    const { loadTest } = await import(path.join(peers, 'loadtest', 'index.js'))
    const options = { url, maxRequests: n, concurrency: c, agentKeepAlive: true, quiet: true, ...status(mode) }
    const r = await loadTest(options)
    done = r.totalRequests
  } else if (['autocannon', 'autocannon-verify', 'pelt-autocannon', 'pelt-autocannon-verify'].includes(mode)) {
    const autocannon = mode.startsWith('pelt') ? require('../../bindings/node/autocannon.js') : require(path.join(peers, 'autocannon'))
    const verify = mode.endsWith('-verify') ? { verifyBody: () => { calls++; return true } } : {}
    const r = await autocannon({ url, amount: n, connections: c, ...(mode.startsWith('pelt') ? { workers: 1 } : {}), ...verify })
    done = r.requests.total
  } else {
    throw new Error(`unknown mode ${mode}`)
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const used = process.cpuUsage(cpu)
  // CPU of the whole process during the load (every thread, the engine's included), without
  // Node's start-up and the module loading before it.
  console.log(JSON.stringify({ requests: done, seconds, cpu_us: used.user + used.system, calls }))
}

main().catch(e => { console.error(e); process.exit(1) })
