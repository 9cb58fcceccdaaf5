/**
 * TLS handshake admission: how many handshakes the event loop works on at once, and whose next.
 *
 * Why: a full TLS 1.3 handshake (ECDSA P-256, client certificate requested) costs the server
 * 2.3–2.7 ms of CPU with Node 20's OpenSSL 3.0 on the reference machine (2 cores), all of it on the
 * one event loop that serves every tenant, and before any filter (authentication, priority and
 * fairness) can tell who is asking. Node starts every handshake the moment its connection is
 * accepted, so a client that opens connections in a loop decides how long the loop's turns are.
 * Answering a ClientHello alone (key share and signature) is about 0.8 ms, and a ClientHello
 * replayed raw costs its sender nothing: 500 such loops from one address (1,200–1,400 answered a
 * second) made another client's GET on a warm connection take p99 137–384 ms instead of 8 ms
 * (docs/benchmarks.md, "Handshake admission"). kube-apiserver has no such limit because Go spreads
 * handshakes over every core.
 *
 * How: an accepted connection waits, untouched, until its client has sent its first bytes (the
 * ClientHello), then in a queue of its source address (an IPv6 address counts by its /64, the
 * block one host is usually given). Handshakes start round-robin across addresses, one at a time
 * within the event loop's shared turn budget (src/endpoints/slicing.ts `runInTurnBudget`: the
 * ClientHello is answered in the start, its key exchange and signature included), with at most
 * {@link HandshakeGateOptions.inFlight} unfinished at once and at most
 * {@link HandshakeGateOptions.inFlightPerAddress} of them from one address. A handshake frees its
 * slot when it completes or fails, or after {@link HandshakeGateOptions.slotMs} when its client is
 * slow to answer (it goes on; it no longer counts, as it no longer costs the loop anything until
 * its client answers). A connection that sent nothing within {@link HandshakeGateOptions.helloMs}
 * is closed. When {@link HandshakeGateOptions.waiting} connections wait, the next one costs the
 * address with the most waiting one of its own: a silent one if it has any, else its newest (the
 * newcomer itself when its address is that one). So a burst from one address may fill the queues
 * while nobody else waits (a client opening 4,000 connections at once gets them all, as from a
 * server without the gate, where the kernel's backlog holds them back), and never crowds another
 * address out.
 *
 * So one address flooding the server waits behind its own connections, another address's new
 * connection starts within a slot or two, and the handshakes' part of a turn is bounded, which
 * keeps requests on established connections (every tenant behind a front-proxy, every client-go
 * and kubectl connection once open) moving. The address is all a server knows before the
 * handshake; clients behind one NAT share a queue.
 */
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import { isIPv6 } from 'node:net';
import { runInTurnBudget } from '../endpoints/slicing.js';

/** Bounds of a {@link HandshakeGate}; the defaults are {@link DEFAULT_HANDSHAKE_GATE}. */
export interface HandshakeGateOptions {
  /** Handshakes started and not yet finished, over all addresses. */
  inFlight: number;
  /** Of those, from one address (or IPv6 /64). */
  inFlightPerAddress: number;
  /** A started handshake whose client has not finished it after this long (ms) frees its slot. */
  slotMs: number;
  /** A connection whose client sent nothing this long (ms) after it was accepted is closed. */
  helloMs: number;
  /** Connections waiting (for their first bytes or for a slot) over all addresses; beyond, one of the longest queue's is closed. */
  waiting: number;
}

/**
 * Defaults: 8 handshakes at once (their second flights, arriving together, are about 8 ms of the
 * loop), 4 per address, a slot held at most 100 ms, 10 s for a client's first bytes (the TLS
 * handshake timeout, 32 s in serving.ts `TLS_HANDSHAKE_TIMEOUT_MS`, applies after the start),
 * 16,384 connections waiting (a waiting connection holds a socket and its ClientHello, a few KiB).
 */
export const DEFAULT_HANDSHAKE_GATE: Readonly<HandshakeGateOptions> = {
  inFlight: 8, inFlightPerAddress: 4, slotMs: 100, helloMs: 10_000, waiting: 16_384,
};

/** What a {@link HandshakeGate} has done since it was installed, and what waits now. */
export interface HandshakeGateStats {
  /** Handshakes started. */
  started: number;
  /** Connections closed before their start: silent too long, or pushed out of full queues. */
  dropped: number;
  /** Connections waiting for first bytes or for a slot now. */
  waiting: number;
  /** Handshakes holding a slot now. */
  inFlight: number;
}

/**
 * The queue key of a remote address: IPv4 (also when IPv4-mapped) as is, IPv6 by its first 64
 * bits, '' when unknown (a connection closed before it was looked at).
 */
export function addressKey(address: string | undefined): string {
  if (!address) return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!isIPv6(address)) return address;
  const zone = address.indexOf('%');
  const bare = zone < 0 ? address : address.slice(0, zone);
  const [head, tail = ''] = bare.split('::') as [string, string?];
  const left = head ? head.split(':') : [];
  const right = bare.includes('::') && tail ? tail.split(':') : [];
  const groups = bare.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':') + '::/64';
}

/** One address's connections: waiting for first bytes or a slot, and its handshakes holding slots. */
interface AddressQueue {
  key: string;
  /** Connections whose first bytes arrived, in order, read from `head`. */
  ready: Socket[];
  head: number;
  /** Connections that have sent nothing yet, in order. */
  silent: Set<Socket>;
  /** Connections of this address not yet started (ready or silent). */
  waiting: number;
  inFlight: number;
  /** In the ring of addresses with ready connections. */
  ringed: boolean;
}

/** A connection between its acceptance and its start; `timer` runs while it is silent. */
interface Waiter { queue: AddressQueue; timer: NodeJS.Timeout | undefined; onHello: () => void; onClose: () => void }

/** A started handshake holding a slot. */
interface Slot { queue: AddressQueue; timer: NodeJS.Timeout }

/**
 * The handshake admission of one TLS server (see the module comment). {@link install} takes over
 * the server's `'connection'` listeners (Node's, which wrap the socket in TLS at once) and calls
 * them when the connection's turn comes.
 */
export class HandshakeGate {
  private readonly opts: HandshakeGateOptions;
  private readonly addresses = new Map<string, AddressQueue>();
  /** Addresses with ready connections, round robin from `ringHead`. */
  private ring: AddressQueue[] = [];
  private ringHead = 0;
  private readonly waiters = new Map<Socket, Waiter>();
  /**
   * Addresses by how many connections they have waiting (index: the count, from 1), and the
   * largest count: the longest queue is found at once when the queues are full, however many
   * addresses wait (a scan of them on every connection let an attacker spread over 16,384
   * addresses, an IPv6 /50, spend about 0.1 ms of the loop per connection it opened).
   */
  private readonly byWaiting: Set<AddressQueue>[] = [];
  private maxWaiting = 0;
  private readonly slots = new Map<Socket, Slot>();
  private startListeners: ((socket: Socket) => void)[] = [];
  private server: TlsServer | undefined;
  private pickScheduled = false;
  private closed = false;
  private inFlight = 0;
  private started = 0;
  private dropped = 0;

  /** @param options bounds, each defaulting to {@link DEFAULT_HANDSHAKE_GATE} */
  constructor(options: Partial<HandshakeGateOptions> = {}) {
    this.opts = { ...DEFAULT_HANDSHAKE_GATE, ...options };
    for (const [k, v] of Object.entries(this.opts)) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`handshake gate: ${k} must be a positive integer, got ${v}`);
    }
  }

  /** Counters and what waits now. */
  get stats(): HandshakeGateStats {
    return { started: this.started, dropped: this.dropped, waiting: this.waiters.size, inFlight: this.inFlight };
  }

  /**
   * Puts the gate in front of `server`'s TLS handshakes: its current `'connection'` listeners run
   * when a connection's turn comes, and its handshake's end (`'secureConnection'`,
   * `'tlsClientError'`) frees the slot.
   * @throws Error when the gate is already installed
   */
  install(server: TlsServer): void {
    if (this.server) throw new Error('handshake gate already installed');
    this.server = server;
    this.startListeners = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => this.accept(socket));
    // Node's TLSSocket keeps the connection it wraps as `_parent`.
    const finished = (tlsSocket: TLSSocket) => this.release((tlsSocket as TLSSocket & { _parent?: Socket })._parent);
    server.on('secureConnection', finished);
    server.on('tlsClientError', (_err: Error, tlsSocket: TLSSocket) => finished(tlsSocket));
  }

  /** Closes every connection still waiting; later ones are closed as they come. */
  close(): void {
    this.closed = true;
    for (const socket of [...this.waiters.keys()]) this.drop(socket);
  }

  private accept(socket: Socket): void {
    if (this.closed) { socket.destroy(); return; }
    const key = addressKey(socket.remoteAddress);
    let queue = this.addresses.get(key);
    if (this.waiters.size >= this.opts.waiting && !this.makeRoom(queue)) {
      this.dropped++;
      socket.destroy();
      return;
    }
    if (!queue) {
      queue = { key, ready: [], head: 0, silent: new Set(), waiting: 0, inFlight: 0, ringed: false };
      this.addresses.set(key, queue);
    }
    this.countWaiting(queue, 1);
    queue.silent.add(socket);
    const waiter: Waiter = {
      queue,
      timer: setTimeout(() => this.drop(socket), this.opts.helloMs),
      // The first bytes (a ClientHello, or anything a client sends first) make it ready; a
      // connection closed before (EOF is 'readable' too) is forgotten.
      onHello: () => { if (socket.readableLength > 0) this.ready(socket, queue!); else this.drop(socket); },
      onClose: () => this.drop(socket),
    };
    this.waiters.set(socket, waiter);
    socket.once('close', waiter.onClose);
    socket.on('error', noop);
    if (socket.readableLength > 0) this.ready(socket, queue);
    else socket.once('readable', waiter.onHello);
  }

  /**
   * Closes one waiting connection of the address with the most waiting, unless that is the
   * newcomer's (`own`, counted with the newcomer): a silent one if it has any, else its newest.
   * @returns whether the newcomer may wait
   */
  private makeRoom(own: AddressQueue | undefined): boolean {
    const longest = this.maxWaiting > 0 ? this.byWaiting[this.maxWaiting]!.values().next().value : undefined;
    if (!longest || longest === own || (own && own.waiting + 1 >= longest.waiting)) return false;
    const victim = longest.silent.size > 0 ? longest.silent.values().next().value! : longest.ready[longest.ready.length - 1]!;
    this.drop(victim);
    return true;
  }

  private ready(socket: Socket, queue: AddressQueue): void {
    const waiter = this.waiters.get(socket)!;
    socket.removeListener('readable', waiter.onHello);
    clearTimeout(waiter.timer);
    waiter.timer = undefined;
    const first = socket.read() as Buffer | null;
    if (first && looksLikeHttp(first)) {
      this.forget(socket, waiter);
      answerPlainHttp(socket);
      this.retire(queue);
      return;
    }
    // Node's TLS socket reads what the connection has buffered when it wraps it (at the start).
    if (first) socket.unshift(first);
    queue.silent.delete(socket);
    queue.ready.push(socket);
    if (!queue.ringed) { queue.ringed = true; this.ring.push(queue); }
    this.schedulePick();
  }

  /** Closes a waiting connection (timed out, closed by its client, or the gate closing). */
  private drop(socket: Socket): void {
    const waiter = this.waiters.get(socket);
    if (!waiter) return;
    this.forget(socket, waiter);
    const q = waiter.queue;
    if (!q.silent.delete(socket)) {
      // Mostly the newest (pushed out) or one near the head (closed by its client).
      const at = q.ready.lastIndexOf(socket);
      if (at >= q.head) q.ready.splice(at, 1);
    }
    if (!socket.destroyed) { this.dropped++; socket.destroy(); }
    this.retire(q);
  }

  private forget(socket: Socket, waiter: Waiter): void {
    clearTimeout(waiter.timer);
    socket.removeListener('close', waiter.onClose);
    socket.removeListener('readable', waiter.onHello);
    socket.removeListener('error', noop);
    this.waiters.delete(socket);
    this.countWaiting(waiter.queue, -1);
  }

  /** Changes an address's waiting count by one, keeping {@link byWaiting} and {@link maxWaiting}. */
  private countWaiting(q: AddressQueue, delta: 1 | -1): void {
    if (q.waiting > 0) this.byWaiting[q.waiting]!.delete(q);
    q.waiting += delta;
    if (q.waiting > 0) (this.byWaiting[q.waiting] ??= new Set()).add(q);
    if (q.waiting > this.maxWaiting) this.maxWaiting = q.waiting;
    // Counts move by one, so the largest drops by at most one per change.
    while (this.maxWaiting > 0 && !this.byWaiting[this.maxWaiting]!.size) this.maxWaiting--;
  }

  /** Forgets an address with nothing waiting, started or ringed. */
  private retire(q: AddressQueue): void {
    if (q.waiting === 0 && q.inFlight === 0 && !q.ringed) this.addresses.delete(q.key);
  }

  private schedulePick(): void {
    if (this.pickScheduled || this.inFlight >= this.opts.inFlight || this.ringHead === this.ring.length) return;
    this.pickScheduled = true;
    runInTurnBudget(this.pick);
  }

  /**
   * Starts the next ready connection of the next address in the ring that has a slot left;
   * addresses passed over keep their place at the ring's end. One start per call: the next is
   * asked for again within the turn's budget.
   */
  private readonly pick = (): void => {
    this.pickScheduled = false;
    if (this.inFlight >= this.opts.inFlight) return;
    let started = false;
    for (let tries = this.ring.length - this.ringHead; tries > 0 && !started; tries--) {
      const q = this.ring[this.ringHead++]!;
      if (q.head === q.ready.length) { q.ringed = false; this.retire(q); continue; }
      if (q.inFlight >= this.opts.inFlightPerAddress) { this.ring.push(q); continue; }
      const socket = q.ready[q.head++]!;
      if (q.head === q.ready.length) { q.ready = []; q.head = 0; q.ringed = false; } else {
        // An address that always has more waiting never empties its array: compacted once the
        // started half is the larger, so it holds no started connection for long.
        if (q.head > 1024 && q.head * 2 > q.ready.length) { q.ready = q.ready.slice(q.head); q.head = 0; }
        this.ring.push(q);
      }
      started = this.start(socket, q);
    }
    if (this.ringHead === this.ring.length) { this.ring = []; this.ringHead = 0; }
    else if (this.ringHead > 1024 && this.ringHead * 2 > this.ring.length) { this.ring = this.ring.slice(this.ringHead); this.ringHead = 0; }
    // Nothing started: every address with ready connections is at its limit; a slot's release picks again.
    if (started) this.schedulePick();
  };

  /** Hands the connection to the server's TLS; false when its client closed it meanwhile. */
  private start(socket: Socket, q: AddressQueue): boolean {
    this.forget(socket, this.waiters.get(socket)!);
    if (socket.destroyed) { this.retire(q); return false; }
    q.inFlight++;
    this.inFlight++;
    this.started++;
    this.slots.set(socket, { queue: q, timer: setTimeout(() => this.release(socket), this.opts.slotMs) });
    socket.once('close', () => this.release(socket));
    for (const listener of this.startListeners) listener.call(this.server, socket);
    return true;
  }

  /** Frees the slot of a started handshake (finished, failed, closed, or slow). */
  private release(socket: Socket | undefined): void {
    const slot = socket && this.slots.get(socket);
    if (!slot) return;
    this.slots.delete(socket);
    clearTimeout(slot.timer);
    slot.queue.inFlight--;
    this.inFlight--;
    this.retire(slot.queue);
    this.schedulePick();
  }
}

function noop(): void { /* a reset of a waiting connection is its close */ }

/**
 * Go's answer to plain HTTP on a TLS port (net/http `conn.serve`, when crypto/tls finds a first
 * record that is not a handshake), which kube-apiserver gives: a client configured with `http://`
 * learns why instead of seeing the connection closed.
 */
export const PLAIN_HTTP_ANSWER = 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n';

/**
 * Whether a connection's first bytes are an HTTP/1.x request line rather than a TLS record: Go's
 * test (net/http `tlsRecordHeaderLooksLikeHTTP`), the first five bytes against the methods a
 * client starts with.
 */
export function looksLikeHttp(first: Buffer): boolean {
  if (first.length < 5) return false;
  const head = first.toString('latin1', 0, 5);
  return head === 'GET /' || head === 'HEAD ' || head === 'POST ' || head === 'PUT /' || head === 'OPTIO';
}

/** Writes {@link PLAIN_HTTP_ANSWER} and closes: what the client sends meanwhile is discarded, a client that keeps the connection is cut after 1 s. */
function answerPlainHttp(socket: Socket): void {
  socket.on('error', noop);
  socket.resume();
  socket.end(PLAIN_HTTP_ANSWER);
  setTimeout(() => socket.destroy(), 1_000).unref();
}
