// The chat: one WebSocket to /live/ROOM (common.js). What it sends is JSON
// {name, text, time}; the hub sends it to everyone in the room, this page
// too, so a message shows once it went round. On joining, the hub sends
// the room's history first (conf/chat.conf: history = 50).
"use strict";

const WHY_CLOSED = {
    1000: "closed",
    1001: "the server is stopping",
    1006: "connection lost",
    1008: "closed by the server's policy",
    1009: "message too big",
    1011: "server error",
};

let room = "";
let socket = null;
let attempt = 0;  // reconnects since the last connection that held
let retry = 0;    // the pending reconnect's timer
// What this room has shown: the history comes again after a reconnect.
// Insertion order, so the oldest go first past 1000.
const shown = new Set();

function connect() {
    clearTimeout(retry);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${HUB}${room}`);
    ws.binaryType = "arraybuffer";
    socket = ws;
    let openedAt = 0;
    setState("connecting", `joining ${room}…`);
    ws.onopen = () => {
        openedAt = Date.now();
        setState("open", `in ${room}`);
    };
    ws.onmessage = event => {
        if (ws !== socket) return;
        const data = typeof event.data === "string" ? event.data
            : new TextDecoder().decode(event.data);
        if (shown.has(data)) return;
        shown.add(data);
        if (shown.size > 1000) shown.delete(shown.values().next().value);
        showMessage(parseMessage(data));
    };
    ws.onclose = event => {
        if (ws !== socket) return;  // left for another room
        socket = null;
        // A connection that held a while starts the backoff anew.
        if (openedAt && Date.now() - openedAt > 10000) attempt = 0;
        const delay = backoffDelay(attempt++);
        const why = WHY_CLOSED[event.code] || `closed (${event.code})`;
        const reason = event.reason ? `: ${event.reason}` : "";
        setState("closed", `${why}${reason}; again in ${Math.ceil(delay / 1000)} s`);
        retry = setTimeout(connect, delay);
    };
}

function join(next) {
    if (next === room && socket) return;
    room = next;
    document.getElementById("room").value = room;
    document.getElementById("events").href = `events.html#${room}`;
    document.getElementById("log").replaceChildren();
    shown.clear();
    attempt = 0;
    if (socket) {
        const old = socket;
        socket = null;
        old.close(1000, "left the room");
    }
    showNote(`Room ${room}`);
    connect();
}

function loadName() {
    try {
        const saved = localStorage.getItem("weft-chat-name");
        if (saved) return saved;
    } catch (e) {
        // No storage (a private window): a new name each time.
    }
    return `guest-${Math.floor(1000 + Math.random() * 9000)}`;
}

function saveName(name) {
    try {
        localStorage.setItem("weft-chat-name", name);
    } catch (e) {
        // Kept for this page only.
    }
}

const nameInput = document.getElementById("name");
const roomInput = document.getElementById("room");
const textInput = document.getElementById("text");

nameInput.value = loadName();
nameInput.addEventListener("change", () => {
    nameInput.value = nameInput.value.trim().slice(0, 40) || loadName();
    saveName(nameInput.value);
});
// Enter in the name field moves on to the message.
nameInput.addEventListener("keydown", event => {
    if (event.key === "Enter") {
        event.preventDefault();
        nameInput.dispatchEvent(new Event("change"));
        textInput.focus();
    }
});

roomInput.addEventListener("change", () => {
    const next = cleanRoom(roomInput.value) || "lobby";
    if (location.hash.slice(1) !== next) location.hash = next;  // hashchange joins
    else join(next);
});
window.addEventListener("hashchange", () => join(roomFromAddress()));

document.getElementById("send").addEventListener("submit", event => {
    event.preventDefault();
    const text = textInput.value.trim();
    if (!text) return;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
        setState(document.getElementById("state").dataset.state,
                 "not connected: the message waits in the field");
        return;
    }
    const name = nameInput.value.trim() || loadName();
    socket.send(JSON.stringify({name, text, time: Date.now()}));
    textInput.value = "";
});

join(roomFromAddress());
