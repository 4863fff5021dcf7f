// Type definitions for redlock-c (Node.js binding of the redlock-c C library).
// Lock, Client and Election are AsyncDisposable (`await using`): the lib
// reference below declares Symbol.asyncDispose for programs whose `lib` leaves
// it out (TypeScript >= 5.2).
/// <reference lib="esnext.disposable" />

/** Options of Client.open(); every option left out keeps the library default. */
export interface ClientOptions {
  /** Extra attempts after the first (-1 = unbounded, 0 = one try). Default 3. */
  retryCount?: number;
  /** Delay between attempts, ms. Default 200. */
  retryDelayMs?: number;
  /** Random extra delay, 0..retryJitterMs ms. Default 200. */
  retryJitterMs?: number;
  /** 0 <= f < 0.5; drift = ttl * f + 2 ms. Default 0.01. */
  driftFactor?: number;
  /** Bound on connecting to a master and its handshake, ms. Default 1000. */
  connectTimeoutMs?: number;
  /** Bound on each round of requests, ms. Default 100. */
  requestTimeoutMs?: number;
  /** Largest TTL, and the restart quarantine length, ms. Default 60000. */
  maxTtlMs?: number;
  /** Restart quarantine. Default true: pass false against freshly started masters. */
  quarantine?: boolean;
  /** Fencing tokens (Lock.fence). Default false. */
  fencing?: boolean;
  /** Key in Redis = keyPrefix + resource. Default "". */
  keyPrefix?: string;
  /** Library log messages, on the JS thread. */
  log?: (level: number, message: string) => void;
  /** Lowest level passed to `log`. Default LOG_WARN. */
  logLevel?: number;
  /** TLS (rediss://): CA bundle (PEM file) or OpenSSL hashed directory; default the system store. */
  tlsCa?: string;
  /** TLS client certificate (PEM), with tlsKey, for masters that require one. */
  tlsCert?: string;
  /** TLS client private key (PEM). */
  tlsKey?: string;
  /** Name the masters' certificates must carry (and SNI), instead of each URI's host. */
  tlsServerName?: string | null;
  /** Verify chain and host name (default true); false only for tests. */
  tlsVerify?: boolean;
  /**
   * Host patterns (fnmatch globs, ASCII case ignored: "10.0.0.*", "*.redis.internal"): once
   * given, an address a sentinel or a cluster node names is never connected to unless its host
   * matches one (that voter votes down, "discovered address HOST:PORT not allowed"). The URIs'
   * own addresses are not checked. At most 64 patterns of 1..255 bytes.
   */
  allowDiscovered?: string[];
  /**
   * Owner label carried in the value of every lock, permit, read/write hold and election
   * lease this client takes, so that inspect() (from any client) tells who holds a resource:
   * 1..MAX_OWNER bytes of printable ASCII (0x21..0x7e) except '~' (InvalidArgumentError
   * otherwise); "" for none (the default). Anyone who can read the masters reads it: never a
   * secret.
   */
  owner?: string;
}

/** Client.inspect's kinds. */
export type InspectKind = 'lock' | 'semaphore' | 'rwlock' | 'election';

/** One hold of Inspection.holders. */
export interface InspectHolder {
  value: string;
  owner: string | null;
  ttl_ms_min: number;
  ttl_ms_max: number;
  /** A semaphore's slot. */
  slot?: number;
  /** A read-write lock's hold. */
  mode?: 'read' | 'write';
}

/** One master of Inspection.masters. */
export interface InspectMaster {
  addr: string;
  /** "holds", "free", "other" (holds what no quorum agrees on), or why it gave no answer ("down", "timeout", "unsupported", ...). */
  state: string;
  value: string | null;
  owner: string | null;
  ttl_ms: number | null;
  holds: number;
}

/** The masters' view of one resource (Client.inspect; docs/api.md "Inspect and revoke"). */
export interface Inspection {
  name: string;
  kind: InspectKind;
  /** A quorum holds the same value (semaphore, read-write lock: some hold). */
  held: boolean;
  /** False when fewer than a quorum answered, or they do not all show the same holds. */
  agreed: boolean;
  /** The label of the hold a quorum agrees on; null when none, or when it has no label. */
  owner: string | null;
  value: string | null;
  ttl_ms_min: number | null;
  ttl_ms_max: number | null;
  /** The largest fence counter a master reports (an election's term), or null. */
  fence: bigint | null;
  quorum: number;
  count: number;
  holders: InspectHolder[];
  masters: InspectMaster[];
}

/** Why a watch or an election's term ended: LOST_EXPIRED (a failure) or LOST_MAX_HOLD (the bound, not a failure). */
export type LostReason = typeof LOST_EXPIRED | typeof LOST_MAX_HOLD;

/** Who leads an election (Client.leader, an Observer's callback). */
export interface LeaderView {
  /** LEADER_NONE, LEADER_HELD or LEADER_UNKNOWN (fewer than a quorum answered: not an error). */
  state: typeof LEADER_NONE | typeof LEADER_HELD | typeof LEADER_UNKNOWN;
  /** The leader's term (its fencing token); 0n unless held. */
  term: bigint;
  /** The lease left (the least over the quorum that holds it), ms; 0 unless held. */
  ttlMs: number;
  /** The leader's owner label; "" when it set none, or when nobody leads. */
  owner: string;
}

/** A follower of one election's leadership (Client.observe). */
export declare class Observer implements AsyncDisposable {
  readonly client: Client;
  readonly name: string;
  /** True after stop() or the client's close. */
  readonly stopped: boolean;
  /** The latest view reported, null before the first. */
  readonly last: LeaderView | null;
  /** Stops observing; no callback runs after it resolves. Idempotent. */
  stop(): Promise<void>;
  /** stop(): `await using observer = client.observe(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface WatchOptions {
  /** Caps the whole hold, ms after the grant (> 0): then released on purpose, onLost(null, LOST_MAX_HOLD). */
  maxHoldMs?: number;
}

export interface SemaphoreOptions extends WaitLockOptions {
  /** Most permits held at once, 1..1024; every client must pass the same limit. */
  limit: number;
}

export interface ElectOptions {
  /** Lease TTL, ms (watched while leader). */
  ttlMs: number;
  /** Same as election.on('elected', fn). */
  onElected?: (term: bigint) => void;
  /** Same as election.on('lost', fn). */
  onLost?: (err: LostError | null, reason: LostReason) => void;
  /**
   * Bounds every term (> 0, ms after its grant): the leader resigns it, 'lost' gets
   * (null, LOST_MAX_HOLD) (not a failure), and the campaign goes on.
   */
  maxHoldMs?: number;
}

/** A campaign for leadership (Client.elect). Events run on the JS thread. */
export declare class Election implements AsyncDisposable {
  readonly client: Client;
  readonly name: string;
  /** Latest term won (fencing token), 0n before any. */
  readonly term: bigint;
  readonly leader: boolean;
  readonly resigned: boolean;
  /** Leadership left in the current term, ms; <= 0 when not leader. */
  readonly validityMs: number;
  /** Why the last term ended (LOST_EXPIRED or LOST_MAX_HOLD), 0 before. */
  readonly lostReason: LostReason | 0;
  on(event: 'elected', listener: (term: bigint) => void): this;
  /** err: a LostError, or null when the term reached maxHoldMs (reason LOST_MAX_HOLD). */
  on(event: 'lost', listener: (err: LostError | null, reason: LostReason) => void): this;
  once(event: 'elected', listener: (term: bigint) => void): this;
  once(event: 'lost', listener: (err: LostError | null, reason: LostReason) => void): this;
  off(event: 'elected' | 'lost', listener: (...args: any[]) => void): this;
  /** Resolves with the term once leader (a term > afterTerm). */
  elected(options?: { afterTerm?: bigint | number; signal?: AbortSignal }): Promise<bigint>;
  /** Stops campaigning, releases the lease if leader. Idempotent. */
  resign(): Promise<void>;
  /** resign(): `await using election = client.elect(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

export interface LockOptions {
  /** Time to live, 1..maxTtlMs ms. */
  ttlMs: number;
  /** Watch the lock (auto-extension) right after it is granted. */
  watch?: boolean;
  /** Called once if a watched lock is lost (implies watch). */
  onLost?: (err: LostError) => void;
}

export interface CancelableOptions extends LockOptions {
  /**
   * Cancels the call (redlock_cancel): nothing more is sent for it, whatever
   * a round already out wins is released, and the promise rejects with a
   * DOMException named 'AbortError' whose `cause` is the signal's reason.
   * An outcome decided before the abort (a grant included) stands.
   */
  signal?: AbortSignal;
}

export interface WaitLockOptions extends CancelableOptions {
  /** 0 (default): retry by the retry policy; > 0: wait up to waitMs for a release. */
  waitMs?: number;
}

/** Options of a lock of several resources: retry policy only (no wait). */
export interface ManyLockOptions extends CancelableOptions {
  waitMs?: 0;
}

export declare class Lock implements AsyncDisposable {
  /** The client that took it. */
  readonly client: Client;
  /** The (first) resource, without the key prefix. */
  readonly resource: string;
  /** All resources of the lock (lockMany). */
  readonly resources: string[];
  /** The random value stored in Redis (32 hex digits). */
  readonly value: string;
  /** Fencing token; 0n without fencing. */
  readonly fence: bigint;
  /** The owner label its value carries (the client's `owner`), "" when none. */
  readonly owner: string;
  /** Why the watch ended (LOST_EXPIRED, or LOST_MAX_HOLD: not a failure), 0 before. */
  readonly lostReason: LostReason | 0;
  /** Local estimate of the validity left, ms (<= 0 once expired, 0 once released). */
  readonly validityMs: number;
  /** True once lost (watch, failed extension) or expired. */
  readonly lost: boolean;
  /** True after unlock() or the client's close. */
  readonly released: boolean;
  /** Resolves with a LostError when a watched lock is lost, with null when it reached maxHoldMs. */
  readonly lostPromise: Promise<LostError | null>;
  /** Sets the TTL to ttlMs from now on a quorum. */
  extend(ttlMs: number): Promise<void>;
  /**
   * Keeps the lock extended until unlock(); onLost is called once if it is lost
   * (err, LOST_EXPIRED), or once the hold reached maxHoldMs (null, LOST_MAX_HOLD).
   */
  watch(onLost?: (err: LostError, reason: LostReason) => void): this;
  watch(onLost: ((err: LostError | null, reason: LostReason) => void) | null | undefined, options: WatchOptions): this;
  /** Releases on all masters; the Lock is released even if this rejects. Idempotent. */
  unlock(): Promise<void>;
  /** unlock(): `await using lock = await client.lock(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

export declare class Client implements AsyncDisposable {
  private constructor();
  /** Opens a client on the masters (redis://host:port, unix:///path). */
  static open(nodes: string[], options?: ClientOptions): Promise<Client>;
  readonly closed: boolean;
  /** The `owner` option as the library took it, "" when none. */
  readonly owner: string;
  /** Retry policy (waitMs 0) or a wait of up to waitMs for a release. */
  lock(resource: string, options: WaitLockOptions): Promise<Lock>;
  /** Every resource (1..64, distinct) or none, as lockMany. */
  lock(resources: string[], options: ManyLockOptions): Promise<Lock>;
  /** lock() with a wait (waitMs > 0 required). */
  lockWait(resource: string, options: WaitLockOptions & { waitMs: number }): Promise<Lock>;
  /** One attempt. */
  tryLock(resource: string, options: LockOptions): Promise<Lock>;
  /** All resources (1..64, distinct) or none, by the retry policy. */
  lockMany(resources: string[], options: CancelableOptions): Promise<Lock>;
  /** Runs fn under the lock and unlocks afterwards. */
  using<T>(resource: string, options: WaitLockOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  using<T>(resources: string[], options: ManyLockOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  /** A permit of a counting semaphore (waitMs 0: one try). */
  semaphoreAcquire(name: string, options: SemaphoreOptions): Promise<Lock>;
  /** A read hold of a read-write lock (waitMs 0: one try). */
  rwlockRead(name: string, options: WaitLockOptions): Promise<Lock>;
  /** The write hold of a read-write lock (waitMs 0: one try). */
  rwlockWrite(name: string, options: WaitLockOptions): Promise<Lock>;
  /** Campaigns for leadership of name. */
  elect(name: string, options: ElectOptions): Election;
  /** The masters' view of one resource (one read round; nothing written). Default kind 'lock'. */
  inspect(name: string, kind?: InspectKind): Promise<Inspection>;
  /** An administrator's revoke: ends the hold on a quorum; the new fence (0n without fencing). */
  revoke(resource: string): Promise<bigint>;
  /** Who leads the election `name` now (one read round). */
  leader(name: string): Promise<LeaderView>;
  /** Follows the leadership of `name`: callback on the first view, then on every change. */
  observe(name: string, callback: (view: LeaderView) => void, options?: { pollMs?: number }): Observer;
  /** Counters, gauges, histograms: parsed JSON, or the text ('json', 'prometheus'). */
  stats(): Record<string, any>;
  stats(format: 'json' | 'prometheus'): string;
  /** One-line summary of the latest round (diagnostics; do not parse). */
  lastVotes(): string;
  /** Cancels pending calls, releases every lock still held. Idempotent. */
  close(): Promise<void>;
  /** close(): `await using client = await Client.open(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Every library error: `errno` is the C code (< 0), `code` its name ("REDLOCK_ELOCKED"). */
export declare class RedlockError extends Error {
  readonly errno: number;
  readonly code: string;
  readonly detail?: string;
  /**
   * For a failed acquisition, extension or unlock whose round was decided
   * (LockedError, NoQuorumError, ExpiredError, LostError, WaitTimeoutError):
   * the one-line summary of that call's own round (redlock_last_votes), e.g.
   * "lost (no quorum): 127.0.0.1:7001=quarantined (restart quarantine: 41234 ms left) ...".
   * Also at the end of `message` when it explains the failure (no quorum, or
   * a master quarantined).  Diagnostics: do not parse it.
   */
  readonly votes?: string;
}
export declare class InvalidArgumentError extends RedlockError {}
export declare class NoMemoryError extends RedlockError {}
/** A quorum answered: someone else holds the resource. */
export declare class LockedError extends RedlockError {}
/**
 * Too few masters answered (down, slow, quarantined).  Also how a wait
 * (`waitMs`) ends when its last attempt could not reach a quorum.
 */
export declare class NoQuorumError extends RedlockError {}
export declare class ExpiredError extends RedlockError {}
export declare class LostError extends RedlockError {}
/** A wait's budget (`waitMs`) ran out while another held the resource. */
export declare class WaitTimeoutError extends RedlockError {}
/** The client was closed during the call. */
export declare class CanceledError extends RedlockError {}
export declare class ClosedError extends RedlockError {}
export declare class WouldBlockError extends RedlockError {}
export declare class RedlockIOError extends RedlockError {}
export declare class NotSupportedError extends RedlockError {}
export declare class ForkedError extends RedlockError {}

export declare const codes: Readonly<{
  EINVAL: -1; ENOMEM: -2; ELOCKED: -3; ENOQUORUM: -4; EEXPIRED: -5; ELOST: -6; ETIMEDOUT: -7;
  ECANCELED: -8; ECLOSED: -9; EWOULDBLOCK: -10; EIO: -11; ENOTSUP: -12; EFORKED: -13;
}>;

export declare const LOG_DEBUG: 0;
export declare const LOG_INFO: 1;
export declare const LOG_WARN: 2;
export declare const LOG_ERROR: 3;
export declare const MAX_NODES: 64;
export declare const MAX_RESOURCE_LEN: 1024;
export declare const MAX_PREFIX_LEN: 256;
export declare const MAX_MANY: 64;
export declare const MAX_SEM_LIMIT: 1024;
export declare const MAX_OWNER: 64;
/** A watch or term that ended in failure (= codes.ELOST). */
export declare const LOST_EXPIRED: -6;
/** A watch or term that reached its maxHoldMs: released on purpose, not an error. */
export declare const LOST_MAX_HOLD: 1;
/** Nobody leads (or a hand-off is half done): a quorum answered, none holds a lease. */
export declare const LEADER_NONE: 0;
/** A quorum holds the same lease. */
export declare const LEADER_HELD: 1;
/** Fewer than a quorum of masters answered. */
export declare const LEADER_UNKNOWN: 2;
/** True when the loaded libredlock can connect to rediss:// masters. */
export declare function tlsSupported(): boolean;

/** Loads libredlock from `file` (else REDLOCK_LIBRARY, the bundled copy, the loader, install dirs, ../../build). */
export declare function loadLibrary(file?: string): unknown;
/** The file libredlock was loaded from (the package's prebuilt copy, REDLOCK_LIBRARY, ...). */
export declare function libraryPath(): string;
export declare function version(): string;
export declare function strerror(code: number): string;
export declare function errName(code: number): string;
/** The library's error table (redlock_err_count / redlock_err_code), in its order. */
export declare function errorTable(): Array<{ code: number; name: string; message: string }>;
/** A string constant of redlock.h by its macro name ('REDLOCK_FENCE_KEY_PREFIX'); null if unknown. */
export declare function constantString(name: string): string | null;
