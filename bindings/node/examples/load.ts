// The README's example, typed: type-checked in CI with `npm run typecheck` (tsc --noEmit).
import { run, startServer, loadTest, type Result, type TimelinePoint } from '../pelt'

async function main(): Promise<void> {
  const server = await startServer({ delay: 0.001 })
  const handle = run({ url: server.url, connections: 16, duration: '2s', expect: 'p99<50ms' })
  handle.on('tick', (p: TimelinePoint) => console.log(`${p.second}s: ${p.rps.toFixed(0)} req/s`))
  const result: Result = await handle
  console.log(`${result.requests.completed} requests, p99 ${result.latency_us.p99} us`)
  console.log(result.thresholds.every(t => t.passed) ? 'thresholds held' : 'a threshold failed')
  const lt = await loadTest({ url: server.url, maxRequests: 1000, concurrency: 10 })
  lt.show()
  console.log(`served ${await server.close()}`)
}

main().catch((e: unknown) => {
  console.error(e)
  process.exit(1)
})
