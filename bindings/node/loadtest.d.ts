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
  /** Called with each request (its body read into request.body) and response, after the
   * answer. Serves from Node.js, like loadtest's server. */
  logger?: (request: import('node:http').IncomingMessage & { body: string }, response: import('node:http').ServerResponse) => void
  /** Answers `error` (500) to a request for which it returns true. Serves from Node.js. */
  shouldErrorCustom?: (request: import('node:http').IncomingMessage & { body: string }) => boolean
  /** The body of every answer (default 'OK'), or a file's. Serves from Node.js. */
  body?: string
  file?: string
}

export declare function startServer(options?: LoadtestServerOptions): Promise<Server>
export declare function startServer(options: LoadtestServerOptions, callback: (error: Error | null, server?: Server) => void): Server | undefined
