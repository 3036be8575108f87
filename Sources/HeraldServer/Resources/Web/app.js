// Herald's live page: every subject on screen through Herald's browser module, which holds one
// stream for all of this browser's tabs of the page.
import { Herald } from "/herald.js";

const $ = (id) => document.getElementById(id);

const view = {
  auctionId: null,
  tripId: null,
  notificationName: "hello",
  units: new Map(),
  // The lobby: the open auctions by id, kept from the `auctions;status=open` collection's events.
  lobby: new Map(),
  // The lobby's snapshot is still arriving (`more: true`).
  lobbyFilling: false,
  // Who watches the selected auction: its streams and its users (presence/auctions/{id}).
  watching: { watchers: 0, users: new Set(), truncated: false },
  herald: null,
  subscription: null,
  retryMs: 3000,
  resyncedUntil: 0,
  // A token (JWT) for a Herald that needs one; kept for this tab only.
  token: sessionStorage.getItem("herald.token") || "",
  // The default currency as Herald last said, and each currency's digits after the point.
  currency: null,
  minorDigits: { dollar: 2, euro: 2, turkishLira: 2, gramGold: 3 },
  // A refused bid's problem, by the auction it was for: shown only while that auction is.
  bidProblems: new Map(),
  // Digits of the selected auction's currency, for the amount field.
  auctionDigits: 2,
};

// ---- Money --------------------------------------------------------------------------------------

const currencyCodes = { dollar: "USD", euro: "EUR", turkishLira: "TRY" };

/** An amount of minor units, formatted in its currency: `$1.50`, `€12.00`, `1.250 g gold`. */
function money(amount, currency) {
  const digits = view.minorDigits[currency] ?? 2;
  const value = amount / 10 ** digits;
  const code = currencyCodes[currency];
  if (!code) return `${value.toFixed(digits)} g gold`;
  return new Intl.NumberFormat("en-US", { style: "currency", currency: code, minimumFractionDigits: digits, maximumFractionDigits: digits })
    .format(value);
}

/** The field's amount (in the currency's units, as typed) in minor units. */
function minorUnits(text, digits) {
  return Math.round(Number(text) * 10 ** digits);
}

// ---- HTTP -------------------------------------------------------------------------------------

/** Sends JSON; resolves to the parsed body, or throws an Error carrying the problem's detail. */
async function send(method, path, body) {
  const headers = body === undefined ? {} : { "Content-Type": "application/json" };
  if (view.token && method !== "GET") headers.Authorization = `Bearer ${view.token}`;
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const fields = (data && data.errors) ? data.errors.map((e) => `${e.field}: ${e.message}`).join("; ") : "";
    throw new Error((data && data.detail) || fields || `${response.status} ${response.statusText}`);
  }
  return data;
}

/** The `sub` of the token in use, read from its payload (Herald checks it; this only fills a form), or "". */
function tokenSubject() {
  try {
    const payload = view.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub || "";
  } catch (error) {
    return "";
  }
}

/** Every entry of a paged list (`GET path`, then each page's `next`), at most `pages` pages. */
async function sendAll(path, name, pages = 50) {
  let entries = [];
  for (let next = path; next && pages > 0; pages -= 1) {
    const page = await send("GET", next);
    entries = entries.concat(page[name]);
    next = page.next;
  }
  return entries;
}

/** Runs `action`, showing its failure in the problem element `problemId` (cleared on success). */
async function attempt(problemId, action) {
  const problem = $(problemId);
  try {
    await action();
    problem.textContent = "";
  } catch (error) {
    problem.textContent = error.message;
  }
}

// ---- The one stream ---------------------------------------------------------------------------

function topics() {
  const list = ["auctions;status=open", "currency", "units", `notifications/${view.notificationName}`];
  if (view.auctionId) list.unshift(`auctions/${view.auctionId}`, `presence/auctions/${view.auctionId}`);
  if (view.tripId) list.push(`trips/${view.tripId}`);
  return list;
}

function setConnection(state, text) {
  const element = $("connection");
  element.dataset.state = state;
  element.textContent = text;
}

/** The module, for this page's token: one stream shared with the browser's other tabs of the page. */
function startHerald() {
  if (view.herald) view.herald.close();
  // The token is read again at each renewal: a fresh one pasted in the field renews the stream before
  // its token expires, without a reconnect (submitting the field starts over with it).
  const herald = new Herald({ token: async () => $("token").value.trim() || view.token || null, name: view.token ? "herald-token" : "herald" });
  view.herald = herald;
  view.subscription = null;
  herald.on("status", (status) => {
    const element = $("connection");
    element.dataset.transport = status.transport;
    element.dataset.leader = String(status.leader);
    if (status.connection === "connected") {
      if (Date.now() > view.resyncedUntil) setConnection("connected", status.transport === "long-poll" ? "connected (long-poll)" : "connected");
    } else if (status.connection === "reconnecting") {
      setConnection("reconnecting", "reconnecting…");
    } else {
      setConnection("connecting", "connecting…");
    }
  });
  herald.on("error", async (error) => {
    if (!view.token && await needsToken()) askForToken();
    else setConnection("reconnecting", error.message);
  });
}

/** Whether Herald refuses a stream for want of a token (401), as a keyed Herald does. */
async function needsToken() {
  const controller = new AbortController();
  try {
    const response = await fetch("/events?topic=currency&snapshot=false", { signal: controller.signal });
    controller.abort();
    return response.status === 401;
  } catch (error) {
    return false;
  }
}

function askForToken() {
  setConnection("token-needed", "Herald needs a token: paste one in the Token field");
  $("token").placeholder = "required: this Herald has a key";
  $("token-problem").textContent = "This Herald needs a token to stream and to change (herald token --key … --sub you).";
}

/** (Re)subscribes to what is on screen. */
function subscribe() {
  if (!view.herald) startHerald();
  if (view.subscription) view.subscription.close();
  const handlers = {};
  const on = (name, handler) => { handlers[name] = handler; };
  view.subscription = view.herald.subscribe(topics(), (event) => {
    const handler = handlers[event.event];
    if (handler) handler(event.data);
  });
  on("snapshot", snapshot);
  on("resync", () => {
    view.resyncedUntil = Date.now() + 4000;
    setConnection("resynced", "resynced");
  });
  // The selected auction's own events come once, as `bid` and `closed`; the lobby follows them too.
  on("bid", (data) => { showAuction(data.auction); lobbyPut(data.auction); });
  on("tick", (data) => showRemaining(data.remainingSeconds));
  on("closed", (data) => { showAuction(data.auction); lobbyPut(data.auction); });
  on("auction", (data) => lobbyPut(data.auction));
  on("currency", (data) => { view.currency = data.default; $("currency-select").value = data.default; showLobby(); });
  on("trip", (data) => showTrip(data.trip));
  on("unit", (data) => { view.units.set(data.unit.id, data.unit); showUnits(); });
  on("notification", logNotification);
  on("joined", (data) => { if (isWatched(data)) { view.watching.users.add(data.sub); showWatching(); } });
  on("left", (data) => {
    if (isWatched(data)) { view.watching.users.delete(data.sub); showWatching(); return; }
    // A member that left its collection's filter (or was removed): a unit gone, an auction closed.
    if (data.topic.startsWith("units/")) { view.units.delete(data.id); showUnits(); }
    if (data.topic.startsWith("auctions/")) { view.lobby.delete(data.id); showLobby(); }
  });
  on("watchers", (data) => { if (isWatched(data)) { view.watching.watchers = data.watchers; showWatching(); } });
}

/** Whether a presence event is the selected auction's. */
function isWatched(data) {
  return data.topic === `presence/auctions/${view.auctionId}`;
}

/** Who watches: the streams open on the auction (a browser's tabs share one), and with tokens the people. */
function showWatching() {
  const { watchers, users, truncated } = view.watching;
  const streams = `${watchers} ${watchers === 1 ? "stream" : "streams"}`;
  const people = users.size === 1 ? "1 person" : `${users.size} people`;
  $("auction-watching").textContent = users.size === 0 || truncated ? streams : `${people} (${streams}): ${[...users].sort().join(", ")}`;
}

function snapshot(data) {
  if (data.topic.startsWith("presence/")) {
    if (isWatched(data)) {
      view.watching = { watchers: data.watchers, users: new Set((data.users || []).map((user) => user.sub)), truncated: !!data.truncated };
      showWatching();
    }
    return;
  }
  const [kind] = data.topic.split("/");
  if (kind === "auctions") showAuction(data.auction);
  if (kind === "currency") showCurrency(data);
  if (kind === "trips") showTrip(data.trip);
  if (data.topic === "auctions") {
    // A large lobby comes in several snapshot events; the first of them starts the map anew.
    if (!view.lobbyFilling) view.lobby = new Map();
    for (const auction of data.auctions) view.lobby.set(auction.id, auction);
    view.lobbyFilling = data.more === true;
    showLobby();
  }
  if (data.topic === "units") {
    view.units = new Map(data.units.map((unit) => [unit.id, unit]));
    showUnits();
  }
}

// ---- Auction ------------------------------------------------------------------------------------

function auctionLabel(auction) {
  return `#${auction.id} ${auction.item} (${auction.status})`;
}

function showAuction(auction) {
  if (!auction || auction.id !== view.auctionId) return;
  const option = [...$("auction-select").options].find((o) => o.value === auction.id);
  if (option) option.textContent = auctionLabel(auction);
  $("auction-item-name").textContent = auction.item;
  const price = $("auction-price");
  price.textContent = money(auction.price, auction.currency);
  price.dataset.amount = String(auction.price);
  view.auctionDigits = view.minorDigits[auction.currency] ?? 2;
  $("auction-leader").textContent = auction.leader || "—";
  $("auction-bids").textContent = String(auction.bidCount);
  const closed = auction.status === "closed";
  if (closed) $("auction-remaining").textContent = "closed";
  else showRemaining(auction.remainingSeconds);
  const winner = $("auction-winner");
  winner.textContent = closed ? (auction.winner || "no bids") : "—";
  winner.classList.toggle("won", closed && !!auction.winner);
  $("bid-button").disabled = closed;
  const amount = $("amount");
  amount.step = String(10 ** -view.auctionDigits);
  amount.placeholder = `more than ${money(auction.price, auction.currency)}`;
  $("amount-label").textContent = `Amount (${auction.currency})`;
  $("bid-problem").textContent = view.bidProblems.get(auction.id) || "";
}

/** An auction's new state in the lobby: shown while open, gone once closed. */
function lobbyPut(auction) {
  if (!auction) return;
  if (auction.status === "open") view.lobby.set(auction.id, auction);
  else view.lobby.delete(auction.id);
  showLobby();
}

function showLobby() {
  const auctions = [...view.lobby.values()].sort((a, b) => Number(a.id) - Number(b.id));
  $("lobby-empty").hidden = auctions.length > 0;
  // The total of the open auctions priced in the default currency; the others are counted apart
  // (Herald knows no exchange rates). A change of the default currency changes what it sums.
  if (view.currency) {
    const priced = auctions.filter((auction) => auction.currency === view.currency);
    const total = priced.reduce((sum, auction) => sum + auction.price, 0);
    const others = auctions.length - priced.length;
    const line = $("lobby-total");
    line.textContent = `Open in ${view.currency}: ${money(total, view.currency)}${others ? `, and ${others} in other currencies` : ""}`;
    line.dataset.amount = String(total);
  }
  $("lobby").replaceChildren(...auctions.map((auction) => {
    const item = document.createElement("li");
    item.dataset.auction = auction.id;
    const pick = document.createElement("button");
    pick.type = "button";
    pick.className = "name";
    pick.textContent = `#${auction.id} ${auction.item}`;
    pick.setAttribute("aria-label", `Show auction ${auction.id}, ${auction.item}`);
    pick.addEventListener("click", async () => {
      await loadAuctions(auction.id);
      subscribe();
    });
    const price = document.createElement("span");
    price.className = "price";
    price.textContent = money(auction.price, auction.currency);
    price.dataset.amount = String(auction.price);
    item.append(pick, price);
    return item;
  }));
}

function showRemaining(seconds) {
  $("auction-remaining").textContent = seconds === null || seconds === undefined ? "not started" : `${seconds} s`;
}

async function loadAuctions(select) {
  const auctions = await sendAll("/auctions?limit=1000", "auctions");
  const picker = $("auction-select");
  picker.replaceChildren(...auctions.map((auction) => new Option(auctionLabel(auction), auction.id)));
  const wanted = select || view.auctionId || (auctions.find((a) => a.status === "open") || auctions[0] || {}).id || null;
  view.auctionId = auctions.some((a) => a.id === wanted) ? wanted : (auctions[0] ? auctions[0].id : null);
  if (view.auctionId) picker.value = view.auctionId;
}

// ---- Currency, trip, units, notifications -------------------------------------------------------

function showCurrency(setting) {
  view.currency = setting.default;
  if (setting.minorDigits) view.minorDigits = setting.minorDigits;
  const select = $("currency-select");
  if (select.options.length !== setting.available.length) {
    select.replaceChildren(...setting.available.map((name) => new Option(name, name)));
  }
  select.value = setting.default;
  showLobby();
}

function showTrip(trip) {
  if (!trip || trip.id !== view.tripId) return;
  const display = trip.display;
  $("trip-date").textContent = display.date;
  const departure = $("trip-departure");
  departure.textContent = trip.delayed ? `${display.departure} → ${display.actualDeparture}` : display.departure;
  departure.classList.toggle("late", trip.delayed);
  $("trip-arrival").textContent = display.arrival;
  $("trip-duration").textContent = display.duration;
  const delay = $("trip-delay");
  delay.hidden = !trip.delayed;
  delay.textContent = trip.delayed ? display.delay : "";
}

function showUnits() {
  const list = $("unit-list");
  const units = [...view.units.values()].sort((a, b) => a.id.localeCompare(b.id));
  list.replaceChildren(...units.map((unit) => {
    const item = document.createElement("li");
    item.dataset.unit = unit.id;
    const face = document.createElement("span");
    face.className = "face";
    face.textContent = unit.face;
    face.setAttribute("aria-hidden", "true");
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = unit.name;
    const status = document.createElement("select");
    status.setAttribute("aria-label", `Status of ${unit.name}`);
    for (const value of ["healthy", "wounded", "dead"]) status.add(new Option(value, value));
    status.value = unit.status;
    status.addEventListener("change", () => attempt("unit-problem",
      () => send("PUT", `/units/${encodeURIComponent(unit.id)}`, { name: unit.name, status: status.value })));
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove ${unit.name}`);
    remove.addEventListener("click", () => attempt("unit-problem",
      () => send("DELETE", `/units/${encodeURIComponent(unit.id)}`)));
    item.append(face, name, status, remove);
    return item;
  }));
}

function logNotification(data) {
  const item = document.createElement("li");
  const object = data.object ? ` from ${data.object}` : "";
  const time = document.createElement("time");
  time.dateTime = data.postedAt;
  time.textContent = new Date(data.postedAt).toLocaleTimeString();
  const payload = document.createElement("code");
  payload.textContent = JSON.stringify(data.userInfo);
  item.append(time, ` ${data.name}${object}: `, payload);
  const log = $("notification-log");
  log.prepend(item);
  while (log.children.length > 50) log.lastChild.remove();
}

// ---- Wiring -------------------------------------------------------------------------------------

async function reload() {
  try {
    await loadAuctions();
    // Read as well as streamed: a Herald that needs a token for streams still shows its state.
    showCurrency(await send("GET", "/currency"));
    const { trips } = await send("GET", "/trips?limit=1");
    view.tripId = trips.length ? trips[0].id : null;
    subscribe();
  } catch (error) {
    setConnection("reconnecting", `server unreachable, retrying in ${view.retryMs / 1000} s`);
    setTimeout(reload, view.retryMs);
  }
}

function wire() {
  $("auction-select").addEventListener("change", (event) => {
    view.auctionId = event.target.value;
    $("bid-problem").textContent = view.bidProblems.get(view.auctionId) || "";
    subscribe();
  });
  $("auction-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt("auction-form-problem", async () => {
      const auction = await send("POST", "/auctions", {
        item: $("auction-item").value,
        countdownSeconds: Number($("auction-countdown").value),
        startingPrice: minorUnits($("auction-start").value, view.minorDigits[view.currency] ?? 2),
      });
      await loadAuctions(auction.id);
      $("auction-create").open = false;
      subscribe();
    });
  });
  $("bid-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!view.auctionId) return;
    // With a token the bidder is the token's user: an empty field takes its name.
    const auctionId = view.auctionId;
    const bid = { bidder: $("bidder").value || tokenSubject(), amount: minorUnits($("amount").value, view.auctionDigits) };
    // The problem is the auction's: shown while it is selected, kept for when it is again.
    send("POST", `/auctions/${auctionId}/bids`, bid).then(() => {
      view.bidProblems.delete(auctionId);
      if (view.auctionId === auctionId) $("bid-problem").textContent = "";
    }, (error) => {
      view.bidProblems.set(auctionId, error.message);
      if (view.auctionId === auctionId) $("bid-problem").textContent = error.message;
    });
  });
  $("token").value = view.token;
  $("bidder").value = tokenSubject();
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    view.token = $("token").value.trim();
    if (view.token) sessionStorage.setItem("herald.token", view.token); else sessionStorage.removeItem("herald.token");
    // The bidder is the token's user (Herald refuses any other name).
    if (tokenSubject()) $("bidder").value = tokenSubject();
    $("token-problem").textContent = "";
    startHerald();
    subscribe();
  });
  $("currency-select").addEventListener("change", (event) => {
    // A refused change puts the select back on the currency Herald keeps.
    attempt("currency-problem", () => send("PUT", "/currency", { default: event.target.value })
      .catch((error) => { if (view.currency) event.target.value = view.currency; throw error; }));
  });
  const move = (seconds) => () => {
    if (view.tripId) attempt("trip-problem", () => send("POST", `/trips/${view.tripId}/delay`, { deltaSeconds: seconds }));
  };
  $("trip-later").addEventListener("click", move(60));
  $("trip-earlier").addEventListener("click", move(-60));
  $("unit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt("unit-problem", () => send("PUT", `/units/${encodeURIComponent($("unit-id").value)}`, {
      name: $("unit-name").value,
      status: $("unit-status").value,
    }));
  });
  $("notification-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt("notification-problem", async () => {
      let userInfo;
      try {
        userInfo = JSON.parse($("notification-payload").value || "{}");
      } catch (error) {
        throw new Error(`the payload is not JSON: ${error.message}`);
      }
      const name = $("notification-name").value;
      const object = $("notification-object").value;
      if (name !== view.notificationName) {
        view.notificationName = name;
        subscribe();
      }
      await send("POST", `/notifications/${encodeURIComponent(name)}`, object ? { object, userInfo } : { userInfo });
    });
  });
  $("notification-name").addEventListener("change", (event) => {
    if (event.target.checkValidity() && event.target.value !== view.notificationName) {
      view.notificationName = event.target.value;
      subscribe();
    }
  });
}

wire();
reload();
