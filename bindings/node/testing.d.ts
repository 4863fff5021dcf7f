/** redlock-c/testing: fake Redis masters for your own tests (include/redlock_testing.h). */
export const NORMAL: 0;
export const GRANT: 1;
export const REFUSE: 2;
export const ALL: 0xffffffff;
export type Mode = 0 | 1 | 2;
export class FakeMasters {
  constructor(n?: number, options?: { tcp?: boolean; virtualTime?: boolean });
  /** The masters' URIs, for Client.open. */
  readonly nodes: string[];
  stop(): void;
  kill(i: number): void;
  restart(i: number): void;
  pause(i: number): void;
  resume(i: number): void;
  slow(i: number, ms: number): void;
  dropKey(i: number, key: string): boolean;
  clockJump(i: number, ms: number): void;
  failover(i: number, lagMs?: number): void;
  mode(i: number, mode: Mode): void;
  advance(ms: number): void;
  hasKey(i: number, key: string): boolean;
  keyCount(key: string): number;
  commands(i: number): number;
}
