// Types of Herald's browser module, /herald.js.

/** One event of a subscription, as its own stream would have sent it. */
export interface HeraldEvent {
  /** The event's global id; null for events without one (`tick`, the stream's own). */
  id: string | null;
  /** `snapshot`, `resync`, `bid`, `tick`, `closed`, `auction`, `currency`, `trip`, `unit`, `removed`, `left`, `notification`. */
  event: string;
  /** The event's JSON data; `topic` names its subject. */
  data: any;
  topic: string | undefined;
}

export interface HeraldStatus {
  /** `eventsource`, `long-poll`, `shared` (another tab holds the stream) or `none`. */
  transport: "eventsource" | "long-poll" | "shared" | "none";
  connection: "connecting" | "connected" | "reconnecting" | "idle" | "ended" | "revoked";
  /** Whether this tab holds the browser's one stream. */
  leader: boolean;
}

export interface HeraldOptions {
  /** Herald's origin; default: the page's. */
  url?: string;
  /** Gives a token (JWT) for streams and renewals; called again before the stream's token expires. */
  token?: () => Promise<string>;
  /** Tabs with the same name and url share one stream; default "herald". */
  name?: string;
  /** Default "auto": a stream, or long-polling `/changes` when no byte gets through within two heartbeats. */
  transport?: "auto" | "eventsource" | "long-poll";
  /** The server's heartbeat in seconds (15). */
  heartbeatSeconds?: number;
  /** Share one stream between the origin's tabs; default: when Web Locks and BroadcastChannel exist. */
  share?: boolean;
}

export interface HeraldSubscription {
  readonly topics: string[];
  /** Stops the subscription; the shared stream drops topics nobody watches any more. */
  close(): void;
}

export interface SubscribeOptions {
  /** Resume after this event id instead of starting with snapshots: a GET's `Herald-Event-ID`. */
  after?: string | number;
}

export declare class Herald {
  constructor(options?: HeraldOptions);
  /** `eventsource`, `long-poll`, `shared` or `none`. */
  readonly transport: string;
  readonly isLeader: boolean;
  /** Snapshots of `topics` first (or every event after `options.after`), then every change; a `resync` is followed by fresh snapshots. */
  subscribe(topics: string[], onEvent: (event: HeraldEvent) => void, options?: SubscribeOptions): HeraldSubscription;
  on(type: "status", handler: (status: HeraldStatus) => void): () => void;
  /** A refused token or renewal, reported once; the module does not retry it in a loop. */
  on(type: "error", handler: (error: Error) => void): () => void;
  /** Gives up this tab's subscriptions; another tab takes over the stream. */
  close(): void;
}
