// Herald's browser module: subscribe to subjects, one stream per browser.
//
//   import { Herald } from "/herald.js";
//   const h = new Herald({ url: "https://herald.example", token: async () => fetchToken() });
//   const sub = h.subscribe(["auctions/1", "currency"], (event) => console.log(event.event, event.data));
//   sub.close();
//
// The tabs of one origin elect a leader with the Web Locks API. The leader holds the one stream, for
// the union of every tab's topics, and hands each event to the other tabs through a BroadcastChannel.
// When the leader tab closes, another takes the lock and resumes from the last event id any tab saw:
// nothing is lost, nothing repeated. A tab that joins gets snapshots of its topics (the leader
// reconnects with `lastEventId` and `added=`, so the others' topics resume exactly).
//
// Tokens: a stream opened with a token is renewed on `token-expiring` (POST /streams/{id}/token)
// without reconnecting; after `expired` it reconnects with a fresh token. A refused token is reported
// once to `onError`, never retried in a loop. After `ended` (an administrator ended the stream) or
// `revoked` (an administrator revoked its token) it does not reconnect: `connection` is "ended" or
// "revoked", and `onError` is told why.
//
// When no event arrives within two heartbeats of opening (a buffering proxy, which may pass the head
// and hold the body), the leader falls back to long-polling GET /changes, from the last id any tab
// saw, or, from no position, from the subjects' snapshots (which /changes without `after` answers):
// no state is lost in either transport, and a `resync` is followed by snapshots in both. `transport`
// says which one is in use.
"use strict";

const CHANNEL_VERSION = 1;

/** A random id for a tab. */
function randomId() {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compares event ids (digit strings of up to 20 digits) without losing precision. */
function idAfter(a, b) {
  if (b === null || b === undefined) return true;
  if (a.length !== b.length) return a.length > b.length;
  return a > b;
}

export class Herald {
  /**
   * @param {object} options
   * @param {string} [options.url] Herald's origin (default: this page's).
   * @param {() => Promise<string>} [options.token] Gives a token (JWT) when one is needed; called
   *   again for a renewal and after `expired`.
   * @param {string} [options.name] Tabs with the same name and url share one stream.
   * @param {"auto"|"eventsource"|"long-poll"} [options.transport]
   * @param {number} [options.heartbeatSeconds] The server's heartbeat (15): two without a byte from
   *   a new stream mean a buffering proxy.
   * @param {boolean} [options.share] Share one stream between tabs (default: when Web Locks and
   *   BroadcastChannel exist).
   */
  constructor(options = {}) {
    this.url = (options.url || (typeof location !== "undefined" ? location.origin : "")).replace(/\/$/, "");
    this.tokenSource = options.token || null;
    this.name = options.name || "herald";
    this.preferred = options.transport || "auto";
    this.heartbeatSeconds = options.heartbeatSeconds || 15;
    this.tab = randomId();
    this.subscriptions = new Set();
    this.listeners = { status: new Set(), error: new Set() };
    this.lastId = null;
    this.role = "starting";
    this.state = { transport: "none", connection: "connecting", leader: null };
    this.closed = false;
    const canShare = typeof navigator !== "undefined" && navigator.locks && typeof BroadcastChannel !== "undefined";
    this.sharing = options.share === undefined ? !!canShare : options.share && !!canShare;
    // The leader's state: the tabs' topics, the open stream, the tabs waiting for snapshots.
    this.tabs = new Map();
    this.source = null;
    this.pollController = null;
    this.streamId = null;
    this.openTopics = [];
    this.pendingSnapshots = null;
    this.reopenTimer = null;
    this.failures = 0;
    if (this.sharing) {
      this.channel = new BroadcastChannel(`herald:${CHANNEL_VERSION}:${this.name}:${this.url}`);
      this.channel.onmessage = (message) => this.receive(message.data);
      this.unload = () => this.close();
      addEventListener("pagehide", this.unload);
      this.lockAbort = new AbortController();
      navigator.locks.request(`herald:${this.name}:${this.url}`, { signal: this.lockAbort.signal }, () => this.lead())
        .catch(() => {});
      this.role = "follower";
    } else {
      this.lead();
    }
  }

  /** The transport in use: "eventsource", "long-poll", "shared" (another tab's stream) or "none". */
  get transport() { return this.role === "follower" ? "shared" : this.state.transport; }

  /** Whether this tab holds the stream. */
  get isLeader() { return this.role === "leader"; }

  /**
   * Calls `onEvent({id, event, data, topic})` for each event of `topics`: first a `snapshot` of each
   * (or, with `options.after`, every event after that id: a page that read state with GET passes the
   * answer's Herald-Event-ID), then every change. A `resync` is followed by fresh snapshots.
   * @returns {{close(): void, topics: string[]}}
   */
  subscribe(topics, onEvent, options = {}) {
    const list = [...new Set(topics)];
    const after = options.after === undefined || options.after === null ? null : String(options.after);
    // Topics whose state this subscription still waits for (none when it resumes from a read's id;
    // a notification has no state).
    const pending = new Set(after ? [] : list.filter((topic) => !topic.startsWith("notifications/")));
    const subscription = { topics: list, onEvent, after, pending, close: () => {
      this.subscriptions.delete(subscription);
      this.announce();
    } };
    this.subscriptions.add(subscription);
    if (after && !this.lastId) this.lastId = after;
    this.announce();
    return subscription;
  }

  /** `type`: "status" ({transport, connection, leader}) or "error" (an Error). */
  on(type, handler) {
    this.listeners[type].add(handler);
    return () => this.listeners[type].delete(handler);
  }

  /** Leaves: gives up the stream (another tab takes it) and every subscription. */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.subscriptions.clear();
    if (this.sharing) {
      this.post({ type: "bye", tab: this.tab });
      removeEventListener("pagehide", this.unload);
      this.lockAbort.abort();
    }
    this.stopStream();
    if (this.releaseLock) this.releaseLock();
    if (this.channel) this.channel.close();
  }

  // ---- Every tab --------------------------------------------------------------------------------

  myTopics() {
    const topics = new Set();
    for (const subscription of this.subscriptions) for (const topic of subscription.topics) topics.add(topic);
    return [...topics].sort();
  }

  /** Tells the leader (this tab or another) what this tab watches, and whose state it still needs. */
  announce() {
    const needs = new Set();
    let after = null;
    for (const subscription of this.subscriptions) {
      for (const topic of subscription.pending) needs.add(topic);
      if (subscription.after) after = subscription.after;
    }
    const want = { tab: this.tab, topics: this.myTopics(), needs: [...needs], after };
    if (this.role === "leader") this.want(want);
    else if (this.sharing) this.post({ type: "want", ...want });
  }

  post(message) {
    if (this.channel && !this.closed) this.channel.postMessage(message);
  }

  /** Hands an event to this tab's subscriptions, each as its own stream would have sent it. */
  deliver(message) {
    if (message.id) {
      // An event this tab has had already (a new leader resumed from an older id than the last
      // message of the old one it had yet to read): not again. A snapshot is state, at the last id.
      const repeat = !idAfter(message.id, this.lastId);
      if (repeat && message.event !== "snapshot" && message.event !== "resync") return;
      if (!repeat) this.lastId = message.id;
    }
    // `ready` only says where the stream starts: every tab keeps its id, no subscriber hears of it.
    if (message.event === "ready") return;
    if (message.to && !message.to.includes(this.tab)) return;
    const data = typeof message.data === "string" ? safeParse(message.data) : message.data;
    for (const subscription of this.subscriptions) {
      const event = viewFor(subscription.topics, message.event, data);
      if (!event) continue;
      if (event.event === "snapshot") {
        for (const topic of subscription.topics) if (topic.split(";")[0] === event.topic) subscription.pending.delete(topic);
      }
      try {
        subscription.onEvent({ id: message.id || null, ...event });
      } catch (error) {
        setTimeout(() => { throw error; });
      }
    }
  }

  setStatus(status) {
    this.state = { ...this.state, ...status };
    const view = { transport: this.transport, connection: this.state.connection, leader: this.role === "leader" };
    for (const handler of this.listeners.status) handler(view);
    if (this.role === "leader") this.post({ type: "status", transport: this.state.transport, connection: this.state.connection });
  }

  fail(error) {
    for (const handler of this.listeners.error) handler(error);
    if (this.role === "leader") this.post({ type: "error", message: error.message });
  }

  receive(message) {
    if (!message || this.closed) return;
    switch (message.type) {
      case "event":
        if (this.role !== "leader") this.deliver(message);
        break;
      case "leader":
        // A new leader resumes from the last id; it needs this tab's topics (and what it still waits for).
        if (message.tab !== this.tab) this.announce();
        break;
      case "want":
        if (this.role === "leader") this.want(message);
        break;
      case "bye":
        if (this.role === "leader" && this.tabs.delete(message.tab)) this.scheduleReopen([]);
        break;
      case "status":
        if (this.role !== "leader") {
          this.state = { ...this.state, transport: message.transport, connection: message.connection };
          this.setStatus({});
        }
        break;
      case "error":
        if (this.role !== "leader") for (const handler of this.listeners.error) handler(new Error(message.message));
        break;
      default:
        break;
    }
  }

  // ---- The leader -------------------------------------------------------------------------------

  /** Holds the lock until this tab closes: runs the stream for every tab. */
  lead() {
    if (this.closed) return Promise.resolve();
    this.role = "leader";
    this.tabs.clear();
    this.post({ type: "leader", tab: this.tab });
    // The others answer with their topics; the stream opens once, for all that answered by then.
    this.announce();
    clearTimeout(this.reopenTimer);
    this.reopenTimer = null;
    this.scheduleReopen([], 50);
    return new Promise((resolve) => { this.releaseLock = resolve; });
  }

  want(message) {
    // A tab that just came hears where the stream stands.
    this.post({ type: "status", transport: this.state.transport, connection: this.state.connection });
    const before = this.tabs.get(message.tab);
    this.tabs.set(message.tab, message.topics);
    if (message.after && !this.lastId) this.lastId = String(message.after);
    // A tab's topics without state yet get snapshots, for that tab; a tab whose topics did not change
    // and needs nothing changes nothing.
    const needs = (message.needs || []).map((topic) => ({ topic, tab: message.tab }));
    const changed = !before || before.length !== message.topics.length || before.some((t, i) => t !== message.topics[i]);
    if (changed || needs.length > 0) this.scheduleReopen(needs);
  }

  union() {
    const topics = new Set();
    for (const list of this.tabs.values()) for (const topic of list) topics.add(topic);
    return [...topics].sort();
  }

  /** Reopens the stream soon (several tabs joining at once make one reopen). */
  scheduleReopen(needs, delay = 20) {
    this.pendingSnapshots = this.pendingSnapshots || [];
    for (const entry of needs) this.pendingSnapshots.push(entry);
    if (this.reopenTimer) return;
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = null;
      this.reopen();
    }, delay);
  }

  reopen() {
    if (this.closed || this.role !== "leader") return;
    const topics = this.union();
    const snapshots = this.pendingSnapshots || [];
    this.pendingSnapshots = null;
    const same = topics.length === this.openTopics.length && topics.every((t, i) => t === this.openTopics[i]);
    if (same && snapshots.length === 0 && (this.source || this.pollController)) return;
    // Without a position, every topic starts with a snapshot anyway: each goes to every tab.
    this.stopStream();
    this.openTopics = topics;
    if (topics.length === 0) {
      this.setStatus({ transport: "none", connection: "idle" });
      return;
    }
    this.open(topics, snapshots).catch((error) => this.fail(error));
  }

  stopStream() {
    if (this.source) { this.source.close(); this.source = null; }
    if (this.pollController) { this.pollController.abort(); this.pollController = null; }
    clearTimeout(this.silenceTimer);
  }

  async token() {
    if (!this.tokenSource) return null;
    return await this.tokenSource();
  }

  /** Opens the stream for `topics`: snapshots for those in `snapshots` (and all, without a position). */
  async open(topics, snapshots) {
    const token = await this.token().catch((error) => { throw new Error(`no token: ${error.message}`); });
    if (this.closed || this.role !== "leader" || topics !== this.openTopics) return;
    if (this.preferred === "long-poll" || this.state.transport === "long-poll") {
      this.poll(topics, token);
      return;
    }
    const query = topics.map((topic) => `topic=${encodeURIComponent(topic)}`);
    const added = [...new Set(snapshots.map((entry) => entry.topic))].filter((topic) => topics.includes(topic));
    if (this.lastId) {
      query.push(`lastEventId=${this.lastId}`);
      for (const topic of added) query.push(`added=${encodeURIComponent(topic)}`);
    }
    if (token) query.push(`access_token=${encodeURIComponent(token)}`);
    // The snapshots of topics added to a resumed stream go to the tabs that asked for them.
    const snapshotTabs = new Map();
    for (const entry of snapshots) {
      if (!snapshotTabs.has(entry.topic)) snapshotTabs.set(entry.topic, new Set());
      snapshotTabs.get(entry.topic).add(entry.tab);
    }
    const source = new EventSource(`${this.url}/events?${query.join("&")}`);
    this.source = source;
    let heard = false;
    // After a resync every tab needs the snapshots that follow.
    let resynced = false;
    this.setStatus({ transport: "eventsource", connection: "connecting" });
    const silence = () => {
      // No byte within two heartbeats: a proxy holds the stream back. Long-poll instead.
      if (heard || this.source !== source || this.preferred === "eventsource") return;
      this.stopStream();
      this.setStatus({ transport: "long-poll", connection: "connecting" });
      this.poll(topics, token);
    };
    clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(silence, 2 * this.heartbeatSeconds * 1000);
    // The head alone is no proof: a proxy may pass it at once and hold the body. The stream counts as
    // heard at its first event (every stream starts with one: its snapshots, or `ready`).
    source.onopen = () => { this.failures = 0; };
    source.onerror = () => {
      if (this.source !== source) return;
      if (source.readyState === EventSource.CLOSED) {
        // Refused (a 4xx: an expired or refused token, a topic that is gone): a fresh token once,
        // then report, with a growing pause, never a tight loop.
        this.source = null;
        this.failures += 1;
        this.setStatus({ connection: "reconnecting" });
        // Reported once for each streak of refusals (the first may be an expired token, which a fresh
        // one mends): not again at every retry.
        if (this.failures === 2) this.fail(new Error("Herald refused the stream (is the token still valid?)"));
        setTimeout(() => { if (this.openTopics === topics) this.restart(); }, Math.min(30000, 1000 * 2 ** this.failures));
      } else {
        this.setStatus({ connection: "reconnecting" });
      }
    };
    const handle = (name) => source.addEventListener(name, (message) => {
      if (this.source !== source) return;
      heard = true;
      // Connected at the first event of each connection (EventSource reconnects on its own, and every
      // connection starts with an event: snapshots, a replay, or `ready`).
      if (this.state.connection !== "connected") {
        this.failures = 0;
        this.setStatus({ connection: "connected" });
      }
      let to;
      if (name === "resync") resynced = true;
      if (name === "snapshot" && this.lastId && !resynced && snapshotTabs.size > 0) {
        const data = safeParse(message.data);
        const tabs = data && [...snapshotTabs.entries()].find(([topic]) => topic.split(";")[0] === data.topic);
        if (tabs) to = [...tabs[1]];
      } else if (name !== "snapshot" && name !== "resync") {
        snapshotTabs.clear();
      }
      // EventSource keeps the last id for events sent without one: Herald's news of the moment has none.
      const event = { id: message.lastEventId && !transient(name, message.data) ? message.lastEventId : null,
                      event: name, data: message.data, to };
      if (name === "stream" || name === "token-expiring" || name === "expired" || name === "ended" || name === "revoked") this.tokenEvent(name, safeParse(message.data));
      else this.broadcast(event);
    });
    for (const name of EVENT_NAMES) handle(name);
  }

  /** Reopens the same topics from the last id, with a fresh token. */
  restart() {
    if (this.closed || this.role !== "leader") return;
    const topics = this.openTopics;
    this.stopStream();
    this.openTopics = [...topics];
    this.open(this.openTopics, []).catch((error) => this.fail(error));
  }

  broadcast(event) {
    this.deliver(event);
    this.post({ type: "event", ...event });
  }

  async tokenEvent(name, data) {
    if (name === "stream") {
      this.streamId = data && data.stream;
      return;
    }
    if (name === "expired") {
      // Not renewed in time: reconnect from the last id with a fresh token.
      this.restart();
      return;
    }
    if (name === "ended" || name === "revoked") {
      // An administrator ended the stream, or revoked its token: final. No reconnect (EventSource
      // would, on its own, and a revoked token would only be refused).
      this.stopStream();
      this.setStatus({ connection: name });
      this.fail(new Error((data && data.reason) || (name === "ended" ? "an administrator ended this stream" : "an administrator revoked this token")));
      return;
    }
    // token-expiring: renew the open stream, which goes on without reconnecting.
    try {
      const token = await this.token();
      if (!token || !this.streamId) return;
      const response = await fetch(`${this.url}/streams/${encodeURIComponent(this.streamId)}/token`, {
        method: "POST", headers: { Authorization: `Bearer ${token}` },
      });
      if (response.status !== 204) {
        let detail = `${response.status}`;
        try { detail = (await response.json()).detail || detail; } catch (error) { /* no body */ }
        this.fail(new Error(`the stream's token was not renewed: ${detail}`));
      }
    } catch (error) {
      this.fail(new Error(`the stream's token was not renewed: ${error.message}`));
    }
  }

  /** Long-polls GET /changes from the last id while no stream gets through. */
  async poll(topics, token) {
    const controller = new AbortController();
    this.pollController = controller;
    this.setStatus({ transport: "long-poll", connection: "connected" });
    const query = topics.map((topic) => `topic=${encodeURIComponent(topic)}`).join("&");
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    let pause = 1000;
    while (!controller.signal.aborted) {
      try {
        const after = this.lastId ? `&after=${this.lastId}&wait=25` : "";
        const response = await fetch(`${this.url}/changes?${query}${after}`, { headers, signal: controller.signal });
        if (response.status === 409) {
          // Too far behind for the history: the caller reads the state again.
          this.lastId = null;
          this.broadcast({ id: null, event: "resync", data: JSON.stringify({ topic: topics[0] }) });
          continue;
        }
        if (!response.ok) throw new Error(`GET /changes: ${response.status}`);
        const answer = await response.json();
        for (const event of answer.events) this.broadcast({ id: event.id, event: event.event, data: event.data });
        if (answer.last && idAfter(answer.last, this.lastId)) this.lastId = answer.last;
        pause = 1000;
      } catch (error) {
        if (controller.signal.aborted) return;
        this.setStatus({ connection: "reconnecting" });
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(pause * 2, 30000);
      }
    }
  }
}

/** What a collection's member is called in its events, and what its filters read. */
const MEMBERS = {
  auctions: { item: "auction", fields: (member) => ({ status: member.status }) },
  trips: { item: "trip", fields: (member) => ({ delayed: String(member.delayed) }) },
  units: { item: "unit", fields: (member) => ({ status: member.status }) },
};

/** `auctions;status=open` → {collection: "auctions", filter: {status: ["open"]}}. */
function parseTopic(topic) {
  const [collection, ...parts] = topic.split(";");
  const filter = {};
  for (const part of parts) {
    const [field, values = ""] = part.split("=");
    filter[field] = values.split(",");
  }
  return { collection, filter };
}

/**
 * The event as a stream of `topics` alone would have sent it, or null when such a stream would not
 * have: the shared stream watches every tab's topics, where a member's own events (`bid`, `closed`,
 * `removed`) stand for its collection's view (`auction`, `left`) when both are watched.
 */
function viewFor(topics, name, data) {
  const topic = data && typeof data === "object" ? data.topic : undefined;
  if (topic === undefined || topics.includes(topic)) return { event: name, data, topic };
  const slash = topic.indexOf("/");
  const parent = slash > 0 ? topic.slice(0, slash) : null;
  for (const wanted of topics) {
    const { collection, filter } = parseTopic(wanted);
    if (collection === topic) return { event: name, data, topic };  // the collection's own snapshot
    if (collection !== parent || !MEMBERS[parent]) continue;
    const { item, fields } = MEMBERS[parent];
    if (name === "left") return { event: name, data, topic };
    if (name === "removed") return { event: "left", data: { topic, id: topic.slice(slash + 1) }, topic };
    const member = data[item];
    if (!member || name === "tick") return null;
    const values = fields(member);
    const matches = Object.entries(filter).every(([field, allowed]) => allowed.includes(values[field]));
    return matches ? { event: item, data: { topic, [item]: member }, topic }
                   : { event: "left", data: { topic, id: String(member.id) }, topic };
  }
  return null;
}

/** Events Herald sends without an id (not kept, not replayed): a tick, presence, the stream's own. */
function transient(name, data) {
  if (["tick", "joined", "watchers", "stream", "token-expiring", "expired", "ended", "revoked"].includes(name)) return true;
  return name === "left" && typeof data === "string" && data.startsWith('{"topic":"presence/');
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    return text;
  }
}

/** Every event name Herald sends on a stream. */
const EVENT_NAMES = ["ready", "snapshot", "resync", "bid", "tick", "closed", "auction", "currency", "trip", "unit", "removed", "left",
  "notification", "joined", "watchers", "stream", "token-expiring", "expired", "ended", "revoked", "message"];
