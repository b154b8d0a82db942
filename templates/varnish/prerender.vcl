# prerender + Varnish: the static tree with live prices through ESI.
#
# Crawl with ESI placeholders:   prerender crawl ... --placeholders esi
# Each price slot in the pages is then
#   <esi:include src="/price?sku=SKU-42"/>
# which Varnish fills per request from the shop's price endpoint, with the
# visitor's zip. The same pages work on Fastly / Akamai ESI.
#
# Backends (EDIT the marked lines):
# - static: anything serving the crawl output as files (nginx, a CDN origin
#   bucket, or `prerender serve OUT`, which serves an ESI tree unfilled);
# - prices: the shop's price endpoint.
#
# The zip: the page's query parameter `zip` first, then the `zip` cookie; a
# value that is not a plausible zip (3-10 letters, digits, hyphens or encoded
# spaces, starting and ending with a letter or digit) is treated as absent and
# the endpoint is asked with an empty zip (its default price). An ESI
# subrequest carries the page's request headers (Cookie), and req_top.url is
# the page's URL.
#
# The endpoint's answer is inserted VERBATIM: Varnish cannot HTML-escape it,
# so the endpoint must answer plain, HTML-safe text (not JSON). If it cannot
# promise that, point the prices backend at `prerender serve` or use
# `prerender serve` directly (see docs/serve.md).
#
# Tested with Debian's varnish 7.1.

vcl 4.1;

backend static {
    .host = "127.0.0.1";                    # EDIT: static origin
    .port = "8081";                         # EDIT
}

backend prices {
    .host = "127.0.0.1";                    # EDIT: price endpoint
    .port = "9000";                         # EDIT
    # A down or slow endpoint must not hold the page: give up quickly and
    # show the fallback (vcl_backend_error).
    .connect_timeout = 0.3s;
    .first_byte_timeout = 0.3s;
    .between_bytes_timeout = 0.3s;
}

sub vcl_recv {
    if (req.url ~ "^/price(\?|$)") {        # EDIT if you crawled with --price-path
        if (req.esi_level == 0) {
            return (synth(404));            # only reachable as an ESI include
        }
        set req.http.X-Prerender-Zip = "";
        if (req_top.url ~ "[?&]zip=[A-Za-z0-9](?:[A-Za-z0-9-]|%20|\+){1,8}[A-Za-z0-9](?:&|$)") {
            set req.http.X-Prerender-Zip = regsub(req_top.url, "^.*[?&]zip=([A-Za-z0-9](?:[A-Za-z0-9-]|%20|\+){1,8}[A-Za-z0-9])(?:&.*)?$", "\1");
        } elsif (req.http.Cookie ~ "(?:^|;\s*)zip=[A-Za-z0-9](?:[A-Za-z0-9-]|%20|\+){1,8}[A-Za-z0-9]\s*(?:;|$)") {
            set req.http.X-Prerender-Zip = regsub(req.http.Cookie, "^(?:.*;\s*)?zip=([A-Za-z0-9](?:[A-Za-z0-9-]|%20|\+){1,8}[A-Za-z0-9])\s*(?:;.*)?$", "\1");
        }
        set req.http.X-Prerender-Sku = "";
        if (req.url ~ "[?&]sku=[A-Za-z0-9%._~-]+") {
            set req.http.X-Prerender-Sku = regsub(req.url, "^.*[?&]sku=([A-Za-z0-9%._~-]+).*$", "\1");
        }
        # EDIT: the endpoint's path and query (the SKU is already percent-encoded).
        set req.url = "/price.asp?sku=" + req.http.X-Prerender-Sku + "&zip=" + req.http.X-Prerender-Zip;
        unset req.http.X-Prerender-Sku;
        unset req.http.X-Prerender-Zip;
        unset req.http.Cookie;
        unset req.http.Accept-Encoding;
        set req.backend_hint = prices;
        return (hash);                      # cached per SKU and zip (the URL)
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.url ~ "^/prerender-manifest\.json" || req.url ~ "/\.(?!well-known/)") {
        return (synth(404));
    }
    set req.backend_hint = static;
    # The pages are the same for everyone until ESI fills them, so they are
    # cached whatever the cookies (the Cookie header stays for the includes).
    return (hash);
}

sub vcl_backend_fetch {
    if (bereq.backend == static) {
        unset bereq.http.Cookie;
    }
}

sub vcl_backend_response {
    if (bereq.backend == prices) {
        if (beresp.status != 200) {
            return (error(503, "no price"));
        }
        unset beresp.http.Set-Cookie;
        set beresp.ttl = 60s;               # a price answer is reused for 60 s
        set beresp.grace = 10m;             # then served stale while refreshed
        return (deliver);
    }
    unset beresp.http.Set-Cookie;
    if (beresp.http.Content-Type ~ "^text/html") {
        set beresp.do_esi = true;
    }
    if (beresp.ttl <= 0s) {
        set beresp.ttl = 5m;                # EDIT: how long pages are cached
    }
}

sub vcl_backend_error {
    if (bereq.backend == prices) {
        # Down, slow, 404 or 5xx: the fallback text, remembered briefly.
        set beresp.status = 200;
        set beresp.reason = "OK";
        set beresp.http.Content-Type = "text/html";
        set beresp.ttl = 5s;
        set beresp.grace = 0s;
        synthetic("See price in cart");     # EDIT: fallback text (inserted as is: HTML-safe text only)
        return (deliver);
    }
}

sub vcl_deliver {
    if (req.esi_level == 0 && resp.http.Content-Type ~ "^text/html") {
        # Filled pages vary per visitor.
        set resp.http.Cache-Control = "private, no-cache";
        set resp.http.Vary = "Cookie, Accept-Encoding";
        unset resp.http.ETag;
        unset resp.http.Last-Modified;
    }
    unset resp.http.Via;
    unset resp.http.X-Varnish;
}
