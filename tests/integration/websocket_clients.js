// Clients of Node's `ws` package (npm) against weft's pubsub handler, for
// test_websocket.py: each mode prints what it saw as one JSON line; any
// failure (an error event, a timeout) prints {"error": ...} and exits 1.
//
//   node websocket_clients.js chat BASE STATUS_URL TOPIC   (ws found through NODE_PATH)
//   node websocket_clients.js basics BASE
//
// BASE is ws://127.0.0.1:PORT. Every client is "ready" once a ping of its own
// came back as a pong: its session runs on its loop, subscribed.
"use strict";
const WebSocket = require("ws");

const kTimeout = 20000;

function withTimeout(promise, what) {
    let timer;
    return Promise.race([
        promise,
        new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), kTimeout);
        }),
    ]).finally(() => clearTimeout(timer));
}

// A client with its received messages in `got` (text as strings, binary as
// {binary: hex}), resolved when ready.
function open(url, protocols) {
    return withTimeout(new Promise((resolve, reject) => {
        const ws = new WebSocket(url, protocols);
        ws.got = [];
        ws.on("message", (data, isBinary) =>
            ws.got.push(isBinary ? {binary: data.toString("hex")} : data.toString()));
        ws.on("error", reject);
        ws.once("open", () => {
            ws.once("pong", () => resolve(ws));
            ws.ping("ready");
        });
    }), `open ${url}`);
}

function closed(ws) {
    return withTimeout(new Promise(resolve => {
        const start = Date.now();
        ws.once("close", (code, reason) =>
            resolve({code, reason: reason.toString(), ms: Date.now() - start}));
    }), "close");
}

function until(predicate, what) {
    return withTimeout(new Promise(resolve => {
        const check = () => (predicate() ? resolve() : setTimeout(check, 20));
        check();
    }), what);
}

// Clients in fours, 8 at least, until both loops hold some (the status
// page's active connections: 2 or more on each, one of them perhaps the
// status request's own), at most 32; then each sends three texts, client 0 a binary one too,
// and every client waits for every message of the others.
async function chat(base, statusUrl, topic) {
    const clients = [];
    let loops = [];
    while (clients.length < 32) {
        for (let i = 0; i < 4; i++) clients.push(await open(`${base}/live/${topic}`));
        const status = await (await fetch(statusUrl)).json();
        loops = status.loops.map(l => l.connections.active);
        if (clients.length >= 8 && loops.length >= 2 && loops.every(n => n >= 2)) break;
    }
    const text = (i, j) => `c${i} m${j} h\u00e9llo \u2713`;
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x80]);
    clients.forEach((ws, i) => {
        for (let j = 0; j < 3; j++) ws.send(text(i, j));
        if (i === 0) ws.send(binary);
    });
    const complete = (ws, i) => clients.every((_, k) => k === i || [0, 1, 2].every(
        j => ws.got.includes(text(k, j)))) &&
        (i === 0 || ws.got.some(m => m.binary === binary.toString("hex")));
    await until(() => clients.every(complete), "every message at every client");
    await new Promise(r => setTimeout(r, 300)); // duplicates, if any, come meanwhile
    const result = {clients: clients.length, loops, got: clients.map(ws => ws.got)};
    for (const ws of clients) ws.close(1000);
    await Promise.all(clients.map(closed));
    return result;
}

async function basics(base) {
    const seen = {};
    // The close handshake from the client: code and reason come back, and
    // the server ends TCP (the close event waits for it).
    let ws = await open(`${base}/live/basics-close`);
    const byClient = closed(ws);
    ws.close(4321, "good bye \u00e9");
    seen.close = await byClient;
    // A ping's payload comes back in the pong.
    ws = await open(`${base}/live/basics-ping`);
    const payload = Buffer.from("payload \u0000\u0001\u00ff", "latin1");
    seen.pong = await withTimeout(new Promise(resolve => {
        ws.once("pong", data => resolve(data.toString("hex")));
        ws.ping(payload);
    }), "pong");
    seen.pingPayload = payload.toString("hex");
    // Subprotocols: the configuration's order picks; permessage-deflate
    // (which ws offers) is not taken.
    const chosen = await open(`${base}/live/basics-protocol`, ["superchat", "chat"]);
    seen.protocol = chosen.protocol;
    seen.extensions = chosen.extensions;
    // A message past max_message (64k): 1009.
    const big = await open(`${base}/live/basics-big`);
    const bigClosed = closed(big);
    big.send("x".repeat(70000));
    seen.big = await bigClosed;
    for (const c of [ws, chosen]) c.close(1000);
    await Promise.all([ws, chosen].map(closed));
    return seen;
}

async function main() {
    const [mode, ...args] = process.argv.slice(2);
    const result = mode === "chat" ? await chat(...args) : await basics(...args);
    console.log(JSON.stringify(result));
}

main().catch(e => {
    console.log(JSON.stringify({error: String(e && e.stack || e)}));
    process.exit(1);
});
