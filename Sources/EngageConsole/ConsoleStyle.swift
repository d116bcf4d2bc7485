import Digest
import Foundation

/// The one stylesheet of every page, inline: light and dark (the reader's `prefers-color-scheme`),
/// narrow screens first. Charts take their colours from classes, so that dark mode reaches them.
enum ConsoleStyle {
    static let stylesheet = """
    :root{color-scheme:light dark;--bg:#f6f7f9;--fg:#1b1d21;--muted:#5d636b;--card:#fff;--line:#dfe2e6;--grid:#eceef1;\
    --accent:#0b5cad;--rich:#0072B2;--plain:#E69F00;--good:#1a7f37;--bad:#b42318;--warn-bg:#fff4d6;--warn-line:#d9a400;\
    --fixed:#444b55;--sequential:#0072B2;--bar-empty:#eef0f3}
    @media (prefers-color-scheme:dark){:root{--bg:#111317;--fg:#e7e9ec;--muted:#a1a8b1;--card:#1b1e23;--line:#2f343b;\
    --grid:#262a30;--accent:#7ab7ff;--rich:#56B4E9;--plain:#E69F00;--good:#4ac26b;--bad:#ff7b72;--warn-bg:#2e2710;\
    --warn-line:#8a6d00;--fixed:#c9ced6;--sequential:#56B4E9;--bar-empty:#2a2e35}}
    *{box-sizing:border-box}
    body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
    a{color:var(--accent)}
    header.top{display:flex;flex-wrap:wrap;align-items:center;gap:6px 14px;padding:10px 14px;background:var(--card);\
    border-bottom:1px solid var(--line)}
    header.top .brand{font-weight:700;font-size:17px;margin-right:6px}
    nav.sections{display:flex;flex-wrap:wrap;gap:4px 12px}
    nav.sections a{text-decoration:none;padding:4px 2px;border-bottom:2px solid transparent;color:var(--fg)}
    nav.sections a[aria-current=page]{border-bottom-color:var(--accent);font-weight:600}
    .session{display:flex;flex-wrap:wrap;align-items:center;gap:6px 10px;margin-left:auto;font-size:13px;color:var(--muted)}
    .session form{display:inline-flex;gap:6px;align-items:center;margin:0}
    main{max-width:1100px;margin:0 auto;padding:14px}
    h1{font-size:22px;margin:6px 0 10px}h2{font-size:18px;margin:0 0 8px}h3{font-size:15px;margin:14px 0 6px}
    section.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px;margin:0 0 14px}
    .muted{color:var(--muted)}.small{font-size:13px}
    .notice{border-radius:8px;padding:10px 14px;margin:0 0 14px;border:1px solid var(--line);background:var(--card)}
    .notice.error{border-color:var(--bad)}.notice.ok{border-color:var(--good)}
    .caveat{background:var(--warn-bg);border:1px solid var(--warn-line);border-radius:8px;padding:10px 14px;margin:0 0 14px}
    form.filters{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:flex-end}
    form.filters label{display:flex;flex-direction:column;font-size:13px;color:var(--muted);gap:2px}
    input,select,button{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:6px;\
    padding:5px 8px;min-height:34px}
    button{cursor:pointer;background:var(--accent);color:#fff;border-color:var(--accent);font-weight:600}
    button.secondary{background:transparent;color:var(--accent)}
    button.danger{background:var(--bad);border-color:var(--bad)}
    .scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
    table{border-collapse:collapse;font-size:13.5px;margin:4px 0;min-width:100%}
    th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap;vertical-align:top}
    th:first-child,td:first-child{text-align:left}th{font-weight:600;color:var(--muted)}
    td.wrap{white-space:normal;text-align:left;min-width:16em}th.left,td.left{text-align:left}
    .up{color:var(--good);font-weight:600}.down{color:var(--bad);font-weight:600}
    .badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;border:1px solid var(--line)}
    .badge.running{border-color:var(--good);color:var(--good)}.badge.stopped{color:var(--muted)}
    .badge.draft{border-color:var(--accent);color:var(--accent)}.badge.bad{border-color:var(--bad);color:var(--bad)}
    .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,330px),1fr));gap:14px}
    .figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px;margin:6px 0}
    .figure{border:1px solid var(--line);border-radius:8px;padding:8px 10px}
    .figure b{display:block;font-size:20px}
    dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 12px;margin:0}dl.facts dt{color:var(--muted)}
    dl.facts dd{margin:0}
    details>summary{cursor:pointer;color:var(--accent)}
    .actions{display:flex;gap:10px;flex-wrap:wrap;margin:8px 0}
    .login{max-width:460px;margin:40px auto}
    .login input[type=password]{width:100%}
    svg.chart{display:block;width:100%;max-width:480px;height:auto;font-family:inherit}
    svg.chart text{fill:var(--fg);font-size:11px}svg.chart text.muted{fill:var(--muted)}
    svg.chart .grid{stroke:var(--grid)}svg.chart .axis{stroke:var(--muted)}svg.chart .zero{stroke:var(--muted);stroke-dasharray:3 3}
    svg.chart .rich{fill:var(--rich);stroke:var(--rich)}svg.chart .plain{fill:var(--plain);stroke:var(--plain)}
    svg.chart .fixed{stroke:var(--fixed);fill:var(--fixed)}svg.chart .sequential{stroke:var(--sequential);fill:var(--sequential)}
    svg.chart .empty{fill:var(--bar-empty)}svg.chart line{stroke-width:2}svg.chart line.grid,svg.chart line.zero{stroke-width:1}\
    svg.chart line.fixed{stroke-width:4}svg.chart line.sequential{stroke-width:1.5}
    svg.chart .o-attached{fill:#009E73}svg.chart .o-timeout{fill:#D55E00}svg.chart .o-too_large{fill:#CC79A7}
    svg.chart .o-unsupported_format{fill:#F0E442}svg.chart .o-download_failed{fill:#56B4E9}svg.chart .o-not_requested{fill:#999}
    svg.chart polyline{fill:none;stroke:var(--accent);stroke-width:2}
    .key{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px}
    .key.rich{background:var(--rich)}.key.plain{background:var(--plain)}.key.fixed{background:var(--fixed)}
    .key.sequential{background:var(--sequential)}
    .key.o-attached{background:#009E73}.key.o-timeout{background:#D55E00}.key.o-too_large{background:#CC79A7}
    .key.o-unsupported_format{background:#F0E442}.key.o-download_failed{background:#56B4E9}.key.o-not_requested{background:#999}
    footer{color:var(--muted);font-size:13px;padding:10px 14px 30px;max-width:1100px;margin:0 auto}
    @media (max-width:600px){body{font-size:14px}main{padding:10px}section.card{padding:10px}h1{font-size:19px}}
    """

    /// The stylesheet's hash as Content-Security-Policy names it: pages may apply this
    /// stylesheet and no other style, and run no script at all.
    static let hash: String = "sha256-" + Data(SHA256.hash(Array(stylesheet.utf8))).base64EncodedString()

    /// Nothing from elsewhere, no scripts, no plugins, no framing; forms post only here.
    static let contentSecurityPolicy = "default-src 'none'; style-src '\(hash)'; img-src 'self' data:; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}
