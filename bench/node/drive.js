'use strict'
// One load through one Node.js API, for bench/node_api.py: prints {"requests": N, "seconds": S,
// "cpu_us": C}.
//   node drive.js MODE URL REQUESTS CONNECTIONS
// MODE: run (pelt's run()), pelt-loadtest (pelt's loadTest()), loadtest (loadtest 8's
// own loadTest()), autocannon (autocannon's API). One thread for pelt, keep-alive for all.
const path = require('node:path')
const [mode, url, requests, connections] = process.argv.slice(2)
const n = Number(requests)
const c = Number(connections)
const peers = path.join(__dirname, 'node_modules')

async function main() {
  const started = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  let done
  if (mode === 'run') {
    const { run } = require('../../bindings/node/pelt.js')
    const r = await run({ url, requests: n, connections: c, threads: 1 })
    done = r.requests.completed
  } else if (mode === 'pelt-loadtest') {
    const { loadTest } = require('../../bindings/node/pelt.js')
    const r = await loadTest({ url, maxRequests: n, concurrency: c, agentKeepAlive: true })
    done = r.totalRequests
  } else if (mode === 'loadtest') {
    const { loadTest } = await import(path.join(peers, 'loadtest', 'index.js'))
    const r = await loadTest({ url, maxRequests: n, concurrency: c, agentKeepAlive: true, quiet: true })
    done = r.totalRequests
  } else if (mode === 'autocannon') {
    const autocannon = require(path.join(peers, 'autocannon'))
    const r = await autocannon({ url, amount: n, connections: c })
    done = r.requests.total
  } else {
    throw new Error(`unknown mode ${mode}`)
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const used = process.cpuUsage(cpu)
  // CPU of the whole process during the load (every thread, the engine's included), without
  // Node's start-up and the module loading before it.
  console.log(JSON.stringify({ requests: done, seconds, cpu_us: used.user + used.system }))
}

main().catch(e => { console.error(e); process.exit(1) })
