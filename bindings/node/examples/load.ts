// The README's example, typed: type-checked in CI with `npm run typecheck` (tsc --noEmit).
import { compare, findMax, run, startServer, type CompareProgress, type FindMaxStep, type Result, type Sample, type TimelinePoint } from '../pelt'
import { loadTest, startServer as loadtestServer } from '../loadtest'

async function main(): Promise<void> {
  const server = await startServer({ delay: 0.001 })
  const handle = run({ url: server.url, connections: 16, duration: '2s', expect: 'p99<50ms' })
  handle.on('tick', (p: TimelinePoint) => console.log(`${p.second}s: ${p.rps.toFixed(0)} req/s`))
  const result: Result = await handle
  console.log(`${result.requests.completed} requests, p99 ${result.latency_us.p99} us`)
  console.log(result.thresholds.every(t => t.passed) ? 'thresholds held' : 'a threshold failed')
  // Every 100th request that ends, as it ends.
  const sampled = run({ url: server.url, requests: 1000, connections: 4, sampleEvery: 100 })
  sampled.on('samples', (rows: Sample[]) => rows.forEach(r => console.log(`#${r.index}: ${r.status}`)))
  await sampled
  // The highest rate at which p99 stays under 20 ms.
  const search = findMax({ url: server.url, slo: ['p99<20ms'], duration: '1s', maxSteps: 3 })
  search.on('step', (s: FindMaxStep) => console.log(`${s.phase} ${s.rate ?? '-'}/s: ${s.passed}`))
  const best = await search
  console.log(best.answer ? `max ${best.answer.rate}/s` : 'no rate held')
  // Two connection counts against the same server, twice each, interleaved.
  const cmp = compare({ target: { local: server.url }, vary: { connections: [4, 16] }, repeat: 2, duration: '1s' })
  cmp.on('run', (r: CompareProgress) => console.log(`${r.cell}: ${r.figures.rps.toFixed(0)} req/s`))
  for (const row of (await cmp).rows) console.log(row.target, row.settings, row.median.rps)
  const lt = await loadTest({ url: server.url, maxRequests: 1000, concurrency: 10 })
  lt.show()
  // loadtest's own test server: delay in milliseconds, 10% of answers 500.
  const other = await loadtestServer({ port: 0, delay: 5, error: 500, percent: 10 })
  const errors = await loadTest({ url: other.url, maxSeconds: 1, concurrency: 4 })
  console.log(`${errors.totalErrors} errors: ${JSON.stringify(errors.errorCodes)}`)
  await other.close()
  console.log(`served ${await server.close()}`)
}

main().catch((e: unknown) => {
  console.error(e)
  process.exit(1)
})
