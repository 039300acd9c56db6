// Types of pelt/loadtest: loadtest 8's API on pelt.
import type { Server } from './pelt'
export { loadTest, LoadtestResult, LoadtestOptions } from './pelt'

/** loadtest's test server options. */
export interface LoadtestServerOptions {
  /** Default 7357, as loadtest; 0 lets the system pick one. */
  port?: number
  /** Wait this many milliseconds before each answer. */
  delay?: number
  /** Answer with this status (500 when only percent is given). */
  error?: number
  /** The share of answers, in percent, that get the error. */
  percent?: number
  quiet?: boolean
}

export declare function startServer(options?: LoadtestServerOptions): Promise<Server>
export declare function startServer(options: LoadtestServerOptions, callback: (error: Error | null) => void): Server | undefined
