// The events page: an EventSource on /live/ROOM (common.js) showing each
// message with its event id. The browser reconnects by itself and sends
// Last-Event-ID, so the hub sends only what it missed; after a reconnect
// of our own (the stream was refused) the history comes again, and ids
// already shown are skipped.
"use strict";

let room = "";
let source = null;
let attempt = 0;
let retry = 0;
let lastId = -1n;  // ids are increasing integers (microseconds)

function listen() {
    clearTimeout(retry);
    const es = new EventSource(`${HUB}${room}`);
    source = es;
    setState("connecting", `listening to ${room}…`);
    es.onopen = () => {
        attempt = 0;
        setState("open", `listening to ${room}`);
    };
    es.onmessage = event => {
        if (es !== source) return;
        let id = null;
        if (/^[0-9]+$/.test(event.lastEventId)) {
            id = BigInt(event.lastEventId);
            if (id <= lastId) return;
            lastId = id;
        }
        showMessage(parseMessage(event.data), event.lastEventId ? `#${event.lastEventId}` : "");
    };
    es.onerror = () => {
        if (es !== source) return;
        if (es.readyState === EventSource.CONNECTING) {
            setState("connecting", `reconnecting to ${room}…`);
            return;
        }
        // CLOSED: the hub refused (404, 406, 503): try again later.
        es.close();
        source = null;
        const delay = backoffDelay(attempt++);
        setState("closed", `refused; again in ${Math.ceil(delay / 1000)} s`);
        retry = setTimeout(listen, delay);
    };
}

function follow(next) {
    if (next === room && source) return;
    room = next;
    lastId = -1n;
    attempt = 0;
    document.getElementById("room").value = room;
    document.getElementById("chat").href = `./#${room}`;
    document.getElementById("example").textContent =
        `curl -d 'hello' ${location.protocol}//${location.host}${HUB}${room}`;
    document.getElementById("log").replaceChildren();
    if (source) {
        source.close();
        source = null;
    }
    showNote(`Room ${room}`);
    listen();
}

document.getElementById("room").addEventListener("change", event => {
    const next = cleanRoom(event.target.value) || "lobby";
    if (location.hash.slice(1) !== next) location.hash = next;
    else follow(next);
});
window.addEventListener("hashchange", () => follow(roomFromAddress()));

follow(roomFromAddress());
