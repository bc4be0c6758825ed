// Herald's operator console. Vanilla JavaScript, no framework, no build step.
//
// Every value that comes from the database (tokens, reasons, payloads, app names) is attacker-controlled text:
// it reaches the page only through textContent and createTextNode (the el() helper below), never through
// innerHTML or attribute-built markup. The server's Content-Security-Policy allows no inline script either.
"use strict";

const state = { role: null, overview: null, dead: { filter: {}, cursor: null, pages: [] }, timer: null };

// MARK: - DOM helpers

/** An element with attributes, text and children; strings become text nodes, never markup. */
function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
        if (value === null || value === undefined || value === false) continue;
        if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
        else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
        if (child === null || child === undefined || child === false) continue;
        node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
}

function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
}

/** Replaces a node's children; as in el(), strings become text nodes and null, undefined and false are left out
 *  (the DOM's own append would write them as the text "null"). */
function fill(node, ...children) {
    clear(node);
    for (const child of children.flat()) {
        if (child === null || child === undefined || child === false) continue;
        node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
}

function view() {
    return document.getElementById("view");
}

/** "4m5s", "2h5m": how long ago (or until) a Unix-millisecond time is from `now`. */
function duration(millis) {
    let seconds = Math.max(0, Math.floor(millis / 1000));
    const parts = [[Math.floor(seconds / 86400), "d"], [Math.floor(seconds / 3600) % 24, "h"],
        [Math.floor(seconds / 60) % 60, "m"], [seconds % 60, "s"]];
    const first = parts.findIndex((part) => part[0] > 0);
    if (first < 0) return "0s";
    return parts.slice(first, first + 2).filter((part) => part[0] > 0).map((part) => part[0] + part[1]).join("");
}

function time(millis) {
    return millis === null || millis === undefined ? "-" : new Date(millis).toISOString().replace(".000Z", "Z");
}

function table(headers, rows, className) {
    return el("table", { class: className || null },
        el("thead", {}, el("tr", {}, headers.map((header) => el("th", {}, header)))),
        el("tbody", {}, rows));
}

function status(text, isError) {
    const bar = document.getElementById("status") || document.body.appendChild(el("div", { id: "status" }));
    bar.textContent = text;
    bar.className = isError ? "error" : "";
}

// MARK: - The API

async function api(path, options) {
    const init = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    if (init.body !== undefined) {
        init.method = init.method || "POST";
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(init.body);
    }
    const response = await fetch(path, init);
    let body = null;
    try {
        body = await response.json();
    } catch (error) {
        body = null;
    }
    if (response.status === 401) {
        showLogin();
        throw new Error("log in first");
    }
    if (!response.ok) {
        const message = body && body.error ? body.error.code + ": " + body.error.message : "HTTP " + response.status;
        throw new Error(message);
    }
    return body;
}

function query(fields) {
    const parts = [];
    for (const [name, value] of Object.entries(fields)) {
        if (value !== null && value !== undefined && value !== "") {
            parts.push(encodeURIComponent(name) + "=" + encodeURIComponent(value));
        }
    }
    return parts.length ? "?" + parts.join("&") : "";
}

function isAdmin() {
    return state.role === "admin";
}

// MARK: - Login

function showLogin() {
    document.getElementById("login").hidden = false;
    document.getElementById("nav").hidden = true;
    document.getElementById("logout").hidden = true;
    clear(view());
    if (new URLSearchParams(location.search).get("login") === "failed") {
        document.getElementById("login-failed").hidden = false;
    }
}

async function start() {
    let session;
    try {
        session = await api("/v1/admin/session");
    } catch (error) {
        return;
    }
    state.role = session.role;
    document.getElementById("login").hidden = true;
    document.getElementById("nav").hidden = false;
    document.getElementById("logout").hidden = !session.login_required;
    document.getElementById("who").textContent = session.role === "admin" ? "" : "read-only";
    window.addEventListener("hashchange", route);
    route();
}

function route() {
    status("");
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
    const [page, argument] = location.hash.replace(/^#/, "").split("/").map(decodeURIComponent);
    for (const link of document.querySelectorAll("#nav a")) {
        link.className = link.getAttribute("href") === "#" + (page || "overview") ? "current" : "";
    }
    switch (page) {
    case "dead": return deadPage(argument);
    case "messages": return messagePage(argument);
    case "tokens": return tokenPage(argument);
    case "apps": return appsPage();
    default:
        overviewPage();
        state.timer = setInterval(overviewPage, 5000);
    }
}

// MARK: - Overview

async function overviewPage() {
    let overview;
    try {
        overview = await api("/v1/admin/overview");
    } catch (error) {
        return status(error.message, true);
    }
    state.overview = overview;
    // A refresh that works clears the error of one that did not (and leaves an action's message alone).
    const bar = document.getElementById("status");
    if (bar && bar.className === "error") status("");
    const now = overview.at;
    const rows = overview.apps.map((app) => el("tr", { "data-app": app.app },
        el("td", { class: "app" }, app.app),
        el("td", {}, app.provider || "-", app.certificate ? certificateNote(app.certificate, now, false) : null),
        el("td", { class: "state " + app.state }, stateText(app, now)),
        el("td", { class: "num queued" }, app.queued),
        el("td", { class: "num ready" }, app.ready),
        el("td", { class: "num" }, app.scheduled),
        el("td", { class: "num scheduled-messages" }, app.scheduled_messages),
        el("td", { class: "num" }, app.inflight),
        el("td", { class: "num dead" }, el("a", { href: "#dead/" + encodeURIComponent(app.app) }, app.dead)),
        el("td", { class: "num" }, app.oldest_ready_seconds === null ? "-" : duration(app.oldest_ready_seconds * 1000)),
        el("td", { class: "num" }, app.last_minute.delivered),
        el("td", { class: "num" }, app.last_minute.dead),
        el("td", { class: "num" }, app.last_minute.dropped),
        el("td", {}, isAdmin() ? switchForm(app) : null)));
    const details = overview.apps.map((app) => el("div", { class: "app-detail" },
        el("h3", {}, app.app),
        app.certificate ? certificateNote(app.certificate, now, true) : null,
        chart(app.last_hour, now),
        app.origins.length ? el("div", { class: "origins" },
            el("h4", {}, "Push-service origins held back (the app sends on to every other origin)"),
            table(["origin", "state"], app.origins.map((origin) => el("tr", { "data-origin": origin.origin },
                el("td", { class: "origin" }, origin.origin),
                el("td", { class: "state " + (origin.paused ? "paused" : "gated") }, stateText(origin, now))))))
            : null,
        el("div", { class: "columns" },
            el("div", {}, el("h4", {}, "Provider answers since start"),
                app.answers.length ? table(["code", "count"], app.answers.map((answer) =>
                    el("tr", {}, el("td", {}, answer.code), el("td", { class: "num" }, answer.count))))
                    : el("p", { class: "quiet" }, "none yet")),
            el("div", {}, el("h4", {}, "Dead letters of the last hour by reason"),
                app.dead_last_hour.length ? table(["reason", "count"], app.dead_last_hour.map((group) =>
                    el("tr", {}, el("td", {}, group.reason === null ? "(none)" : group.reason),
                        el("td", { class: "num" }, group.count))))
                    : el("p", { class: "quiet" }, "none")))));
    fill(view(), 
        el("h2", {}, "Overview"),
        el("p", { class: "quiet" }, "As of " + time(now) + "; refreshed every 5 s."
            + (overview.secrets_key_id ? " Secrets key " + overview.secrets_key_id + "." : "")
            + (now - overview.counts_at > 1000 ? " The backlog is big: its counts are from " + duration(now
                - overview.counts_at) + " ago, the last minute's figures from this process's counters." : "")),
        overview.apps.length === 0 ? el("p", {}, "No apps yet: nothing was ever queued.")
            : table(["app", "provider", "state", "queued", "ready", "scheduled", "scheduled msgs", "in flight", "dead",
                "oldest ready", "delivered/min", "dead/min", "dropped/min", ""], rows, "overview"),
        outcomeWebhooks(overview.outcome_webhooks, now),
        ...details);
}

// The outcome webhooks: how far each receiver has acknowledged the feed, its lag, skips and last failed attempt.
function outcomeWebhooks(webhooks, now) {
    if (webhooks.length === 0) return null;
    return el("div", { class: "webhooks" }, el("h3", {}, "Outcome webhooks"),
        table(["webhook", "acknowledged seq", "batches in flight", "lag", "skipped", "last error"],
            webhooks.map((hook) => el("tr", { "data-webhook": hook.webhook },
                el("td", {}, hook.webhook === "*" ? "* (every app without its own)" : hook.webhook),
                el("td", { class: "num" }, hook.seq),
                el("td", { class: "num" }, hook.batches_in_flight),
                el("td", { class: "num" }, duration(hook.lag_seconds * 1000)),
                el("td", { class: "num" }, hook.skipped),
                el("td", {}, hook.last_error === null ? "-"
                    : hook.last_error + " (" + duration(now - hook.last_error_at) + " ago)")))));
}

// An APNs app's certificate: when it expires (a warning within 30 days), and in full its subject and fingerprint.
function certificateNote(certificate, now, full) {
    const left = certificate.expires_at - now;
    const when = left > 0 ? "expires in " + duration(left) : "expired " + duration(-left) + " ago";
    const text = full ? "APNs certificate " + (certificate.subject || "") + " " + when + " ("
        + time(certificate.expires_at) + "); SHA-256 " + certificate.sha256 : " · certificate " + when;
    return el(full ? "p" : "span", { class: "certificate" + (left < 30 * 86400000 ? " expiring" : "") }, text);
}

// An app's state, or a push-service origin's (the same fields).
function stateText(app, now) {
    if (app.paused) {
        const since = app.paused_at ? " since " + duration(now - app.paused_at) + " ago" : "";
        return "paused" + since + ": " + (app.pause_reason || "no reason given");
    }
    if (app.gated) {
        return "gated for " + duration(app.gate_until - now) + " (" + (app.gate_reason || "Retry-After or server error")
            + ")";
    }
    return "sending";
}

function switchForm(app) {
    // Resuming an app resumes its paused push-service origins too.
    if (app.paused || app.origins.some((origin) => origin.paused)) {
        return el("button", { type: "button", class: "resume", onclick: () => switchApp(app.app, "resume") },
            "Resume");
    }
    const reason = el("input", { type: "text", placeholder: "reason", class: "pause-reason", maxlength: 200 });
    return el("span", {}, reason, el("button", { type: "button", class: "pause",
        onclick: () => switchApp(app.app, "pause", reason.value) }, "Pause"));
}

async function switchApp(app, action, reason) {
    try {
        await api("/v1/admin/apps/" + encodeURIComponent(app) + "/" + action,
            { body: action === "pause" ? { reason: reason || "" } : {} });
        status((action === "pause" ? "paused " : "resumed ") + app);
    } catch (error) {
        return status(error.message, true);
    }
    overviewPage();
}

/** The last hour a minute at a time: an SVG of delivered, dead and dropped, built with DOM calls only. */
function chart(minutes, now) {
    const svgNS = "http://www.w3.org/2000/svg";
    const width = 600;
    const height = 120;
    const top = Math.max(1, ...minutes.map((minute) => Math.max(minute.delivered, minute.dead, minute.dropped)));
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("viewBox", "0 0 " + width + " " + (height + 20));
    svg.setAttribute("class", "chart");
    svg.setAttribute("role", "img");
    const series = [["delivered", "#2a7"], ["dead", "#c33"], ["dropped", "#999"]];
    for (const [name, colour] of series) {
        const points = minutes.map((minute, index) =>
            (index * width / (minutes.length - 1)).toFixed(1) + ","
            + (height - minute[name] * height / top).toFixed(1));
        const line = document.createElementNS(svgNS, "polyline");
        line.setAttribute("points", points.join(" "));
        line.setAttribute("fill", "none");
        line.setAttribute("stroke", colour);
        line.setAttribute("stroke-width", "2");
        svg.appendChild(line);
    }
    const label = document.createElementNS(svgNS, "text");
    label.setAttribute("x", "0");
    label.setAttribute("y", String(height + 16));
    label.textContent = "last hour, per minute (peak " + top + "): delivered green, dead red, dropped grey";
    svg.appendChild(label);
    return svg;
}

// MARK: - Dead letters

function deadFilterForm(filter) {
    const apps = (state.overview ? state.overview.apps.map((app) => app.app) : []);
    const app = el("select", { name: "app" }, el("option", { value: "" }, "every app"),
        apps.map((name) => el("option", { value: name, selected: name === filter.app }, name)));
    const reason = el("input", { name: "reason", placeholder: "reason", value: filter.reason || "" });
    const since = el("select", { name: "since" },
        [["", "any time"], ["15m", "last 15 min"], ["1h", "last hour"], ["24h", "last day"], ["7d", "last week"]]
            .map(([value, text]) => el("option", { value: value, selected: value === (filter.since || "") }, text)));
    const token = el("input", { name: "token", placeholder: "token", value: filter.token || "" });
    return el("form", { id: "dead-filter", onsubmit: (event) => {
        event.preventDefault();
        state.dead.filter = { app: app.value, reason: reason.value, since: since.value, token: token.value };
        state.dead.pages = [];
        loadDead(null);
    } }, app, reason, since, token, el("button", { type: "submit" }, "Filter"));
}

async function deadPage(app) {
    if (!state.overview) {
        try {
            state.overview = await api("/v1/admin/overview");
        } catch (error) {
            return status(error.message, true);
        }
    }
    state.dead.filter = app ? { app: app } : state.dead.filter;
    state.dead.pages = [];
    fill(view(), el("h2", {}, "Dead letters"), deadFilterForm(state.dead.filter),
        el("div", { id: "dead-actions" }), el("div", { id: "dead-list" }), el("div", { id: "dead-detail" }));
    loadDead(null);
}

async function loadDead(after) {
    const filter = state.dead.filter;
    let page;
    try {
        page = await api("/v1/admin/dead" + query(Object.assign({}, filter, { after: after, limit: 50 })));
    } catch (error) {
        return status(error.message, true);
    }
    state.dead.at = page.at;
    const rows = page.dead_letters.map((letter) => el("tr", { "data-id": letter.delivery_id },
        el("td", {}, isAdmin() ? el("input", { type: "checkbox", class: "pick", value: letter.delivery_id }) : null),
        el("td", { class: "num" }, el("a", { href: "#", class: "show",
            onclick: (event) => { event.preventDefault(); showDead(letter.delivery_id); } }, letter.delivery_id)),
        el("td", {}, letter.app),
        el("td", { class: "token" }, letter.token),
        el("td", { class: "reason" }, letter.reason === null ? "-" : letter.reason),
        el("td", { class: "num" }, letter.attempts),
        el("td", { class: "num" }, letter.last_status === null ? "-" : letter.last_status),
        el("td", {}, duration(page.at - letter.died_at) + " ago"),
        el("td", {}, letter.expired ? "expired" : "")));
    const list = clear(document.getElementById("dead-list"));
    list.append(page.dead_letters.length === 0 ? el("p", {}, "No dead letters match.")
        : table(["", "id", "app", "token", "reason", "attempts", "status", "died", ""], rows, "dead"));
    const more = el("p", {});
    if (after !== null) {
        more.append(el("button", { type: "button", onclick: () => loadDead(state.dead.pages.pop() || null) },
            "Newer"));
    }
    if (page.next) {
        more.append(el("button", { type: "button", id: "dead-next", onclick: () => {
            state.dead.pages.push(after);
            loadDead(page.next);
        } }, "Older"));
    }
    list.append(more);
    deadActions();
}

function deadActions() {
    const actions = clear(document.getElementById("dead-actions"));
    if (!isAdmin()) return actions.append(el("p", { class: "quiet" }, "Read-only: you can look, not act."));
    actions.append(
        el("button", { type: "button", id: "requeue-selected", onclick: () => changeSelected("requeue") },
            "Requeue selected"),
        el("button", { type: "button", id: "purge-selected", onclick: () => changeSelected("purge") },
            "Purge selected"),
        el("button", { type: "button", id: "requeue-all", onclick: () => changeAll("requeue") },
            "Requeue all that match"),
        el("button", { type: "button", id: "purge-all", onclick: () => changeAll("purge") },
            "Purge all that match"),
        el("span", { id: "progress" }));
}

async function changeSelected(action) {
    const ids = [...document.querySelectorAll("#dead-list input.pick:checked")].map((box) => Number(box.value));
    if (ids.length === 0) return status("select dead letters first", true);
    if (action === "purge" && !confirm("Delete " + ids.length + " dead letters for good?")) return;
    try {
        const result = await api("/v1/admin/dead/" + action, { body: { ids: ids } });
        const count = action === "requeue" ? result.requeued : result.purged;
        status((action === "requeue" ? "requeued " : "purged ") + count + " of " + ids.length);
    } catch (error) {
        return status(error.message, true);
    }
    loadDead(null);
}

/** Requeue or purge every dead letter that matches, a chunk per request, with progress; never one big write.
 *  After each chunk it waits as long as the chunk took, so the writer is never more than half busy with it and
 *  ingest's messages wait behind at most one chunk. */
async function changeAll(action) {
    const filter = state.dead.filter;
    const until = state.dead.at;
    const summary = await api("/v1/admin/dead/summary" + query(Object.assign({}, filter, { until: until })));
    if (!confirm((action === "requeue" ? "Requeue " : "Delete for good ") + summary.total + " dead letters?")) return;
    const chunkFilter = Object.assign({}, filter, { since: summary.filter.since, until: until });
    const progress = document.getElementById("progress");
    let done = 0;
    try {
        for (;;) {
            const started = performance.now();
            const result = await api("/v1/admin/dead/" + action, { body: { filter: chunkFilter, limit: 500 } });
            done += action === "requeue" ? result.requeued : result.purged;
            progress.textContent = done + " of " + summary.total;
            if (result.done) {
                if (result.skipped_expired) {
                    progress.textContent += "; " + result.skipped_expired + " skipped (their message expired)";
                }
                break;
            }
            await new Promise((resume) => setTimeout(resume, performance.now() - started));
        }
    } catch (error) {
        return status(error.message, true);
    }
    status((action === "requeue" ? "requeued " : "purged ") + done);
    loadDead(null);
}

async function showDead(id) {
    let letter;
    try {
        letter = await api("/v1/admin/dead/" + encodeURIComponent(id));
    } catch (error) {
        return status(error.message, true);
    }
    const message = letter.message;
    fill(document.getElementById("dead-detail"), 
        el("h3", {}, "Dead letter " + letter.delivery_id),
        el("dl", {},
            el("dt", {}, "token"), el("dd", { class: "token" }, letter.token),
            el("dt", {}, "reason"), el("dd", { class: "reason" }, letter.reason === null ? "-" : letter.reason),
            el("dt", {}, "attempts"), el("dd", {}, letter.attempts),
            el("dt", {}, "died"), el("dd", {}, time(letter.died_at)),
            el("dt", {}, "message"), el("dd", {}, el("a", { href: "#messages/" + encodeURIComponent(message.id) },
                message.id))),
        el("pre", { class: "payload" }, JSON.stringify(message, null, 2)));
}

// MARK: - Messages

function lookupForm(id, placeholder, value, go) {
    const input = el("input", { id: id, placeholder: placeholder, value: value || "" });
    return el("form", { onsubmit: (event) => { event.preventDefault(); go(input.value.trim()); } },
        input, el("button", { type: "submit" }, "Look up"));
}

async function messagePage(id) {
    fill(view(), el("h2", {}, "Messages"),
        lookupForm("message-id", "message id", id,
            (value) => { location.hash = "messages/" + encodeURIComponent(value); }),
        el("div", { id: "message" }));
    if (!id) return;
    let message;
    try {
        message = await api("/v1/admin/messages/" + encodeURIComponent(id));
    } catch (error) {
        return status(error.message, true);
    }
    const rows = message.deliveries.map((delivery) => el("tr", {},
        el("td", { class: "token" }, delivery.token), el("td", {}, delivery.state),
        el("td", {}, delivery.reason === null ? "-" : delivery.reason), el("td", { class: "num" }, delivery.attempts),
        el("td", {}, time(delivery.next_attempt_at)), el("td", {}, delivery.fcm_message_id || "-")));
    const counts = Object.entries(message.counts).map(([name, count]) => name + " " + count).join(", ");
    const payload = Object.assign({}, message);
    delete payload.deliveries;
    fill(document.getElementById("message"), 
        el("p", {}, message.app + ", " + message.format + ", created " + time(message.created_at)
            + (message.send_at === null ? "" : ", scheduled for " + time(message.send_at))
            + (message.cancelled_at === null ? "" : ", cancelled " + time(message.cancelled_at)) + ": " + counts),
        isAdmin() && message.counts.queued > 0 ? el("button", { type: "button", id: "cancel-message",
            onclick: () => cancelMessage(message.id) }, "Cancel its queued deliveries") : null,
        table(["token", "state", "reason", "attempts", "next attempt", "provider id"], rows),
        el("pre", { class: "payload" }, JSON.stringify(payload, null, 2)));
}

async function cancelMessage(id) {
    if (!confirm("Cancel every queued delivery of " + id + "?")) return;
    try {
        const result = await api("/v1/admin/messages/" + encodeURIComponent(id) + "/cancel", { body: {} });
        status("cancelled " + result.cancelled);
    } catch (error) {
        return status(error.message, true);
    }
    messagePage(id);
}

// MARK: - Tokens and users

function eventRows(events) {
    return events.map((event) => el("tr", {},
        el("td", {}, time(event.at)), el("td", {}, event.app), el("td", { class: "token" }, event.token),
        el("td", {}, event.kind), el("td", { class: "token" }, event.replacement || "-"),
        el("td", {}, event.reason || "-")));
}

const eventHeaders = ["at", "app", "token", "kind", "replacement", "reason"];

async function tokenPage(argument) {
    const [kind, value] = argument ? [argument.split(":")[0], argument.slice(argument.indexOf(":") + 1)] : ["", ""];
    fill(view(), el("h2", {}, "Tokens and users"),
        lookupForm("token-lookup", "token", kind === "token" ? value : "",
            (text) => { location.hash = "tokens/" + encodeURIComponent("token:" + text); }),
        lookupForm("user-lookup", "user", kind === "user" ? value : "",
            (text) => { location.hash = "tokens/" + encodeURIComponent("user:" + text); }),
        el("div", { id: "lookup" }), el("h3", {}, "Latest token events"), el("div", { id: "feed" }));
    try {
        const feed = await api("/v1/admin/token-events?limit=50");
        document.getElementById("feed").append(feed.events.length ? table(eventHeaders, eventRows(feed.events))
            : el("p", { class: "quiet" }, "none"));
        const lookup = document.getElementById("lookup");
        if (kind === "token" && value) {
            const token = await api("/v1/admin/tokens/" + encodeURIComponent(value));
            const registration = token.registration;
            lookup.append(el("h3", {}, "Token"), el("p", { class: "token" }, token.token),
                el("p", {}, registration ? "registered to app " + registration.app + ", user "
                    + (registration.user || "-") + ", since " + time(registration.created_at) : "not registered"),
                el("h4", {}, "Events"), token.events.length ? table(eventHeaders, eventRows(token.events))
                    : el("p", { class: "quiet" }, "none"),
                el("h4", {}, "Dead letters"), token.dead_letters.length ? table(["id", "app", "reason", "died"],
                    token.dead_letters.map((letter) => el("tr", {}, el("td", {}, letter.delivery_id),
                        el("td", {}, letter.app), el("td", {}, letter.reason || "-"),
                        el("td", {}, time(letter.died_at)))))
                    : el("p", { class: "quiet" }, "none"));
        } else if (kind === "user" && value) {
            const user = await api("/v1/admin/users/" + encodeURIComponent(value));
            lookup.append(el("h3", {}, "User " + user.user),
                user.tokens.length ? table(["token", "app", "registered"], user.tokens.map((token) => el("tr", {},
                    el("td", { class: "token" }, token.token), el("td", {}, token.app),
                    el("td", {}, time(token.created_at))))) : el("p", { class: "quiet" }, "no registered tokens"),
                el("h4", {}, "Events"), user.events.length ? table(eventHeaders, eventRows(user.events))
                    : el("p", { class: "quiet" }, "none"));
        }
    } catch (error) {
        status(error.message, true);
    }
}

// MARK: - Apps

// The apps of the config file (read-only) and those stored in the database, which an admin adds, changes and
// removes here. Secrets are never shown: a stored secret appears as its SHA-256 and the id of the key that sealed it.
async function appsPage() {
    let listed;
    try {
        listed = await api("/v1/admin/apps");
    } catch (error) {
        return status(error.message, true);
    }
    const secretNote = (value) => [value.client_email, value.private_key_id ? "key " + value.private_key_id : null,
        value.sha256 ? "SHA-256 " + value.sha256.slice(0, 16) + "…" : null,
        value.secrets_key_id ? "sealed under " + value.secrets_key_id : null].filter((part) => part).join(", ");
    const credentials = (app) => Object.entries(app)
        .filter(([, value]) => value && typeof value === "object" && !Array.isArray(value) && value.sha256)
        .map(([name, value]) => el("div", { class: "secret" }, name + ": " + secretNote(value)));
    const rows = listed.apps.map((app) => el("tr", { "data-app": app.name },
        el("td", { class: "app" }, app.name),
        el("td", {}, app.provider),
        el("td", {}, app.source),
        el("td", {}, app.key_id ? "key id " + app.key_id : null, credentials(app)),
        el("td", {}, app.version === undefined ? "-" : String(app.version)),
        el("td", {}, time(app.updated_at)),
        el("td", {}, isAdmin() && app.source === "database" ? [
            el("button", { type: "button", class: "edit", onclick: () => editApp(app) }, "Edit"),
            el("button", { type: "button", class: "remove", onclick: () => removeApp(app.name) }, "Remove"),
        ] : null)));
    fill(view(),
        el("h2", {}, "Apps"),
        el("p", { class: "quiet" }, "Apps of the config file are read-only here. A change to a stored app reaches "
            + "every instance within 5 s; requests already sent finish with the credentials they were sent with."),
        listed.apps.length ? table(["app", "provider", "source", "credentials", "version", "updated", ""], rows, "apps")
            : el("p", {}, "No apps."),
        isAdmin() ? appEditor() : null);
}

/** The form that stores an app: its name and its "apps" entry as JSON, secrets inline or as files on the server. */
function appEditor() {
    const name = el("input", { id: "app-name", placeholder: "name", required: true });
    const entry = el("textarea", { id: "app-entry", rows: 10, cols: 80, spellcheck: "false",
        placeholder: '{"provider": "fcm-v1", "service_account": {…}}  or  {"provider": "apns", "key": "-----BEGIN '
            + 'PRIVATE KEY-----…", "key_id": "…", "team_id": "…", "topic": "…"}' });
    return el("form", { id: "app-form", onsubmit: (event) => {
        event.preventDefault();
        saveApp(name.value, entry.value);
    } }, el("h3", {}, "Add or change an app"),
        el("p", { class: "quiet" }, "The entry is a config-file \"apps\" entry. Its secrets are stored encrypted and "
            + "never shown again: give them again when changing an app."),
        name, el("br"), entry, el("br"), el("button", { type: "submit" }, "Save"));
}

function editApp(app) {
    const entry = {};
    for (const [key, value] of Object.entries(app)) {
        const described = value && typeof value === "object" && !Array.isArray(value) && value.sha256;
        if (!described && !["name", "source", "version", "created_at", "updated_at"].includes(key)) entry[key] = value;
    }
    document.getElementById("app-name").value = app.name;
    document.getElementById("app-entry").value = JSON.stringify(entry, null, 2);
}

async function saveApp(name, text) {
    let entry;
    try {
        entry = JSON.parse(text);
    } catch (error) {
        return status("the entry is not JSON: " + error.message, true);
    }
    try {
        const saved = await api("/v1/admin/apps/" + encodeURIComponent(name), { method: "PUT", body: entry });
        await appsPage();
        status("stored " + saved.name + " (version " + saved.version + ")");
    } catch (error) {
        status(error.message, true);
    }
}

async function removeApp(name) {
    if (!window.confirm("Remove app " + name + "? Its queued messages wait until an app of that name is back.")) return;
    try {
        await api("/v1/admin/apps/" + encodeURIComponent(name), { method: "DELETE" });
        await appsPage();
        status("removed " + name);
    } catch (error) {
        status(error.message, true);
    }
}

document.addEventListener("DOMContentLoaded", start);
