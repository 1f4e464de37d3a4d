// What the chat page (chat.js) and the events page (events.js) share: the
// room from the address, the state line, the backoff between reconnects,
// and showing a message. Received data only ever reaches the page through
// textContent: a message holding <script> or <img onerror> shows as text.
"use strict";

// The hub's prefix in conf/chat.conf (pubsub /live).
const HUB = "/live/";

// A room is what the hub takes as a topic: 1-200 bytes of A-Z a-z 0-9
// . _ ~ - and /, no empty segment. Anything else is dropped from it.
function cleanRoom(text) {
    return text.replace(/[^A-Za-z0-9._~\/-]/g, "").split("/").filter(Boolean).join("/")
        .slice(0, 200).replace(/\/+$/, "");
}

function roomFromAddress() {
    let hash = location.hash.slice(1);
    try {
        hash = decodeURIComponent(hash);
    } catch (e) {
        // A stray % is just dropped by cleanRoom.
    }
    return cleanRoom(hash) || "lobby";
}

// The line that says how the connection is; data-state is for scripts
// (open, connecting, closed).
function setState(state, text) {
    const line = document.getElementById("state");
    line.dataset.state = state;
    line.textContent = text;
}

// 0.5 s, 1 s, 2 s ... up to 30 s, each between half and all of it, so
// that tabs a restart dropped together do not all come back together.
function backoffDelay(attempt) {
    const full = Math.min(30000, 500 * 2 ** Math.min(attempt, 6));
    return full / 2 + Math.random() * full / 2;
}

// The chat's messages are JSON {name, text, time}; anything else (a plain
// text POST, say) is shown as it came.
function parseMessage(data) {
    try {
        const m = JSON.parse(data);
        if (m && typeof m === "object" && typeof m.text === "string") {
            return {
                name: typeof m.name === "string" ? m.name : "?",
                text: m.text,
                time: typeof m.time === "number" ? new Date(m.time) : null,
            };
        }
    } catch (e) {
        // Not JSON: shown as it is below.
    }
    return {name: "", text: String(data), time: null};
}

// Appends one message to #log (at most `keep` are kept), scrolled into
// view when the reader was at the bottom already.
function showMessage(message, extra, keep = 500) {
    const log = document.getElementById("log");
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    const item = document.createElement("li");
    const part = (cls, text) => {
        const span = document.createElement("span");
        span.className = cls;
        span.textContent = text;
        item.append(span);
    };
    if (extra) part("id", extra);
    if (message.time && !isNaN(message.time)) part("time", message.time.toLocaleTimeString());
    if (message.name) part("name", message.name);
    part("text", message.text);
    log.append(item);
    while (log.children.length > keep) log.firstElementChild.remove();
    if (atBottom) item.scrollIntoView({block: "end"});
}

// A line of our own (joined, reconnected) between the messages.
function showNote(text) {
    const item = document.createElement("li");
    item.className = "note";
    item.textContent = text;
    document.getElementById("log").append(item);
}
