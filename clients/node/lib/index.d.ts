// Types of fixed-window-pg.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

/** What FixedWindow needs of a pool: pg.Pool's query(config). */
export interface Queryable {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<{ rows: any[] }>;
}

export interface FixedWindowOptions {
  /** One server. */
  pool?: Queryable;
  /** A pool per shard, in the router's order (p0, p1, ...). */
  shards?: Queryable[];
  /** How keys are routed among shards, as the router's fw_routing_method(): 'jump' (default) or 'modulo'. */
  routing?: 'jump' | 'modulo';
  /** The schema of the extension; by default found once in pg_extension. */
  schema?: string;
  /** Named prepared statements (default true); after a pooler loses one, unnamed. */
  prepare?: boolean;
  /** When the database is unavailable: true, or a function of the error, answers ok with failedOpen. */
  failOpen?: boolean | ((error: FixedWindowUnavailableError) => boolean);
}

/** An inline limit: rate tokens every period. Without rate, the call is of the named policy. */
export interface LimitOptions {
  rate?: number;
  /** Whole milliseconds, or a PostgreSQL interval such as '1 minute' or '1 month'. */
  period?: number | string;
  /** The grid's anchor; null gives each key its own phase; left out, the epoch. */
  start?: Date | string | null;
  /** Tokens this call spends (default 1). */
  cost?: number;
  /** Most tokens a counter can hold (default: rate, no rollover). */
  capacity?: number | null;
  /** A pg client to run the call on, in a transaction of the caller's; the call is not prepared. */
  connection?: Queryable;
}

export interface LimitResult {
  /** The tokens covered the cost (and for limit were spent). */
  ok: boolean;
  /** Milliseconds until the same call will be allowed; null when ok, or when no such time exists. */
  retryAfter: number | null;
  /** Tokens left; null when failed open. */
  remaining: number | null;
  /** Milliseconds until the current window ends; null when failed open. */
  resetAfter: number | null;
  /** Present, true, when failOpen answered because the database was unavailable. */
  failedOpen?: true;
}

export interface WindowResult {
  /** The window's length in milliseconds (a month counts 30 days). */
  period: number;
  rate: number;
  capacity: number;
  shadow: boolean;
  ok: boolean;
  retryAfter: number | null;
  remaining: number;
  resetAfter: number;
  /** Milliseconds since the epoch. */
  windowStart: number;
  windowEnd: number;
}

export interface WindowsResult {
  /** Every enforced (not shadow) window allowed. */
  ok: boolean;
  /** The RateLimit headers of the answer (fw_headers). */
  headers: Record<string, string>;
  windows: WindowResult[];
}

export declare class FixedWindow {
  constructor(options: FixedWindowOptions);
  /** A FixedWindow on the shards the router lists, routed as it routes. Pool is pg.Pool. */
  static fromRouter(router: Queryable, Pool: new (config: object) => Queryable, poolOptions?: object): Promise<FixedWindow>;
  limit(name: string, key: string, options?: LimitOptions): Promise<LimitResult>;
  check(name: string, key: string, options?: LimitOptions): Promise<LimitResult>;
  /** A named policy's call, a row per window, with its HTTP headers. */
  limitWindows(name: string, key: string, options?: { cost?: number; connection?: Queryable }): Promise<WindowsResult>;
  checkWindows(name: string, key: string, options?: { cost?: number; connection?: Queryable }): Promise<WindowsResult>;
  /** Gives back up to cost tokens; resolves to the tokens the counter holds now. */
  refund(name: string, key: string, options?: LimitOptions): Promise<number>;
  /** fw_reset(name, key): the counters removed. Needs fw_admin's grant. */
  reset(name: string, key: string, options?: { connection?: Queryable }): Promise<number>;
  readonly pools: Queryable[];
  readonly routing: 'jump' | 'modulo';
  /** The shard, from 0, that holds (name, key). */
  shardOf(name: string, key: string): number;
}

export declare class FixedWindowError extends Error {
  /** The SQLSTATE, or the system error code of a connection. */
  code: string | undefined;
  cause?: unknown;
}
export declare class FixedWindowInputError extends FixedWindowError {}
export declare class FixedWindowUndefinedPolicyError extends FixedWindowError {}
export declare class FixedWindowPermissionError extends FixedWindowError {}
export declare class FixedWindowConfigurationError extends FixedWindowError {}
export declare class FixedWindowCapacityError extends FixedWindowError {}
export declare class FixedWindowStateError extends FixedWindowError {}
export declare class FixedWindowUnavailableError extends FixedWindowError {}
/** The FixedWindowError of an error pg (or Node's network) raised, by its SQLSTATE or system code; one of ours as it is. */
export declare function fromDriver(error: unknown): FixedWindowError;

/** fw_shard(name, key, count, method) of the router. */
export declare function shardOf(name: string, key: string, count: number, method?: 'jump' | 'modulo'): number;
/** fw_shard_hash(name, key) of the router. */
export declare function shardHash(name: string, key: string): number;
/** fw_jump_hash(key, count) of the router. */
export declare function jumpHash(key: number | bigint, count: number): number;
/** pg's settings of a libpq connection string in keyword=value form. */
export declare function parseConninfo(conninfo: string): Record<string, unknown>;

// ---- @fastify/rate-limit (lib/fastify.cjs)
export interface FastifyStoreResult { current: number; ttl: number; }
export interface FastifyStoreOptions {
  /** The fixed_window name of the global limit (default 'fastify-rate-limit'); routes count in `${name}:${method} ${url}`,
   *  groups in `${name}:group ${groupId}`, createRateLimit(options) in `${name}:limiter ${n}`; with ban >= 1, denials in `${that}:denied`. */
  name?: string;
}
export interface FixedWindowFastifyStore {
  incr(key: string, callback: (error: Error | null, result?: FastifyStoreResult) => void, timeWindow: number, max: number): void;
  read(key: string, callback: (error: Error | null, result?: FastifyStoreResult) => void, timeWindow: number, max: number): void;
  child(routeOptions: object): FixedWindowFastifyStore;
}
export interface FixedWindowFastifyStoreClass {
  /** Throws for continueExceeding or exponentialBackoff. */
  new (params?: object): FixedWindowFastifyStore;
}
/** The store class to pass as @fastify/rate-limit's `store` option. */
export declare function fastifyStore(client: FixedWindow, options?: FastifyStoreOptions): FixedWindowFastifyStoreClass;

// ---- rate-limiter-flexible (lib/flexible.cjs)
/** The fields of rate-limiter-flexible's RateLimiterRes: what every operation resolves with and a denied consume rejects with. */
export declare class FixedWindowRateLimiterRes {
  /** Points the key's current window has left. */
  readonly remainingPoints: number;
  /** Milliseconds until the window ends (for a denial: until the points will be there). */
  readonly msBeforeNext: number;
  /** Points the window holds: never above points (a denied consume spends nothing). */
  readonly consumedPoints: number;
  readonly isFirstInDuration: boolean;
  /** Present, true, when the client's failOpen admitted the consume. */
  readonly failedOpen?: true;
  toString(): string;
  toJSON(): { remainingPoints: number; msBeforeNext: number; consumedPoints: number; isFirstInDuration: boolean };
}
/** What RateLimiterFixedWindow's operations take or hand to an insuranceLimiter: rate-limiter-flexible's interface. */
export interface RateLimiterFixedWindowLike {
  consume(key: string | number, pointsToConsume?: number, options?: { [key: string]: any }): Promise<any>;
  penalty(key: string | number, points?: number, options?: { [key: string]: any }): Promise<any>;
  reward(key: string | number, points?: number, options?: { [key: string]: any }): Promise<any>;
  get(key: string | number, options?: { [key: string]: any }): Promise<any>;
  delete(key: string | number, options?: { [key: string]: any }): Promise<boolean>;
}
export interface RateLimiterFixedWindowOptions {
  /** A FixedWindow, or a pg.Pool to make one on (storeClient: the same). */
  client?: FixedWindow | Queryable;
  storeClient?: FixedWindow | Queryable;
  /** The fixed_window name the limiter counts under (default 'rlflx'); not empty. */
  keyPrefix?: string;
  /** The window's rate: a whole number >= 1 (default 4). */
  points?: number;
  /** The window's length in seconds, > 0 in whole milliseconds (default 1); 0 (never expires) is refused. */
  duration?: number;
  /** Left out: each key its own phase (start => NULL); undefined: the epoch's grid; or the grid's anchor. */
  start?: Date | string | null;
  /** Only 0: a fixed window cannot block beyond its end. */
  blockDuration?: 0;
  /** Delays admitted consumes over the window, as the library does. */
  execEvenly?: boolean;
  execEvenlyMinDelayMs?: number;
  /** Only 0: fixed_window never counts beyond points. */
  inMemoryBlockOnConsumed?: 0;
  /** Answers instead while the database is unavailable (FixedWindowUnavailableError only). */
  insuranceLimiter?: RateLimiterFixedWindowLike;
}
/** rate-limiter-flexible's RateLimiterCompatibleAbstract on fixed_window: name = keyPrefix, rate = points, period = duration. */
export declare class RateLimiterFixedWindow {
  constructor(options?: RateLimiterFixedWindowOptions);
  /** The same limiter as a subclass of the library's class (pass RateLimiterCompatibleAbstract), for
   *  RateLimiterUnion and insuranceLimiter, which test instanceof. */
  static extending<Base extends abstract new () => object>(base: Base): new (options?: RateLimiterFixedWindowOptions) => RateLimiterFixedWindow & InstanceType<Base>;
  readonly client: FixedWindow;
  readonly keyPrefix: string;
  readonly points: number;
  readonly duration: number;
  readonly msDuration: number;
  readonly start: Date | string | null | undefined;
  /** Always 0; setting anything else throws. */
  blockDuration: number;
  execEvenly: boolean;
  readonly execEvenlyMinDelayMs: number;
  insuranceLimiter?: RateLimiterFixedWindowLike;
  getKey(key: string | number): string;
  parseKey(rlKey: string): string;
  /** Resolves when admitted; rejects with a FixedWindowRateLimiterRes when denied, with an Error when the store failed. customDuration is refused. */
  consume(key: string | number, pointsToConsume?: number, options?: { [key: string]: any }): Promise<FixedWindowRateLimiterRes>;
  /** Spends up to points, at most what the current window has left. */
  penalty(key: string | number, points?: number, options?: { [key: string]: any }): Promise<FixedWindowRateLimiterRes>;
  /** Gives back up to points to the current window (fw_refund's grant). */
  reward(key: string | number, points?: number, options?: { [key: string]: any }): Promise<FixedWindowRateLimiterRes>;
  /** null when the key has spent nothing in its current window. */
  get(key: string | number, options?: { [key: string]: any }): Promise<FixedWindowRateLimiterRes | null>;
  /** Always rejects: a counter lives one window. Use penalty(), reward() or delete(). */
  set(key: string | number, points: number, secDuration: number, options?: { [key: string]: any }): Promise<never>;
  /** Always rejects: use penalty(key, points), or a limiter with a longer duration. */
  block(key: string | number, secDuration: number, options?: { [key: string]: any }): Promise<never>;
  /** fw_reset (fw_admin's grant): true when the key had a counter. */
  delete(key: string | number, options?: { [key: string]: any }): Promise<boolean>;
}

// ---- express-rate-limit (lib/express.cjs)
export interface FixedWindowStoreOptions {
  /** A FixedWindow. */
  client: FixedWindow;
  /** The fixed_window name the limiter counts under (default 'express-rate-limit'). */
  name?: string;
}
export interface ExpressClientRateLimitInfo { totalHits: number; resetTime: Date | undefined; }
/** express-rate-limit's store on fixed_window: the decision is the database's, a denied hit spends nothing. */
export declare class FixedWindowStore {
  constructor(options: FixedWindowStoreOptions);
  readonly client: FixedWindow;
  readonly name: string;
  readonly prefix: string;
  readonly localKeys: false;
  /** Throws (and every later call rejects) when limit is a function and the limiter's keyGenerator is not this store's. */
  init(options: { windowMs: number; limit: number | ((request: any, response: any) => number | Promise<number>);
    skipFailedRequests?: boolean; skipSuccessfulRequests?: boolean; statusCode?: number; keyGenerator?: unknown }): void;
  /** For limit as a function: your key generator, wrapped to hand each request's limit to the store. */
  keyGenerator<Request = any, Response = any>(inner: (request: Request, response: Response) => string | Promise<string>):
    (request: Request, response: Response) => Promise<string>;
  increment(key: string): Promise<ExpressClientRateLimitInfo>;
  /** Gives the hit's token back, unless a hit of the key that spent nothing (denied, limit 0, failed open) is still owed. */
  decrement(key: string): Promise<void>;
  /** What the key spent in its window; undefined when limit is a function. */
  get(key: string): Promise<ExpressClientRateLimitInfo | undefined>;
  /** Gives the key's window back whole (fw_refund). */
  resetKey(key: string): Promise<void>;
  /** Always rejects: fw_reset(name) is an admin's, in SQL. */
  resetAll(): Promise<never>;
}
