"""One self-contained HTML file: the tables (every cell links to the samples behind it), the
plots (inline SVG), the comparisons (gains / losses link to the flipped items) and a per-sample
browser (filter by run, benchmark, task, mode, shots, correct / incorrect, error type, text).

No network: CSS, JavaScript, data and plots are inline.  The browser's state lives in the URL
hash — ``report.html#filter=incorrect&task=nubench&error=local`` or ``#ref=<cell id>`` — and is
applied on load, so a filtered view is a link (and a headless browser can check it)."""

from __future__ import annotations

import datetime as _dt
import html as _html
from typing import Any, Sequence

from negbench import __version__
from negbench.files import to_json

CSS = r"""
:root{--bg:#fff;--fg:#1d2330;--mut:#5b6475;--line:#dfe3ea;--acc:#2458c6;--ok:#1b7f3b;--bad:#b3261e;--sel:#fff3b0}
*{box-sizing:border-box}
body{margin:0;font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--fg);background:var(--bg)}
#nb-layout{display:grid;grid-template-columns:minmax(0,1fr) clamp(320px,28vw,440px);min-height:100vh}
#nb-main{padding:18px 22px;min-width:0}
#nb-browser{position:sticky;top:0;height:100vh;overflow:auto;border-left:1px solid var(--line);background:#f7f8fb;padding:12px 14px}
@media (max-width:1100px){#nb-layout{grid-template-columns:1fr}#nb-browser{position:static;height:auto;border-left:0;border-top:1px solid var(--line)}}
h1{font-size:21px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:2px solid var(--line);padding-bottom:3px}
h3{font-size:14px;margin:18px 0 4px}.mut{color:var(--mut)}.cap{color:var(--mut);margin:2px 0 6px;max-width:1000px}
nav a{margin-right:12px}a{color:var(--acc)}
table.nb-table,table.nb-plain{border-collapse:separate;border-spacing:0;margin:0;font-variant-numeric:tabular-nums}
.nb-scroll{width:fit-content;max-width:100%;overflow-x:auto;margin:6px 0 4px;border-left:1px solid var(--line);border-top:1px solid var(--line)}
.nb-scroll>table{border-left:0;border-top:0}
.nb-table th,.nb-table td,.nb-plain th,.nb-plain td{border:solid var(--line);border-width:0 1px 1px 0;padding:3px 7px;text-align:right;white-space:nowrap;background:#fff}
.nb-scroll tbody tr>:first-child,.nb-scroll thead th.nb-rowhead:first-child{position:sticky;left:0;z-index:1;box-shadow:1px 0 0 var(--line)}
.nb-plain td.nb-wrap{white-space:normal;min-width:8em;max-width:30em;text-align:left}
.nb-plain td.nb-path{overflow-wrap:anywhere}
.nb-table td.nb-left,.nb-plain td.nb-left{text-align:left}
.nb-cmp tbody th.nb-long{white-space:normal;overflow-wrap:anywhere;min-width:8em;max-width:14em}
.nb-table.nb-cmp th,.nb-table.nb-cmp td{padding:3px 3px}.nb-table.nb-cmp thead th{min-width:3em}
.nb-table td.nb-long,.nb-table tbody th.nb-long{white-space:normal;overflow-wrap:break-word;min-width:7em;max-width:26em;text-align:left}
.nb-table td.nb-para{min-width:11em}
.nb-table th,.nb-table td{padding:3px 5px}.nb-table td.nb-sd{white-space:normal}.nb-table td.nb-sd span{white-space:nowrap}.nb-table td span.nb-ci{display:block;white-space:normal;font-size:.8em;color:var(--mut)}.nb-table td span.nb-ci span{white-space:nowrap}.nb-table thead th.nb-brk{hyphens:auto;overflow-wrap:anywhere}
.nb-table thead th,.nb-plain thead th{background:#eef1f7;text-align:center;font-weight:600;white-space:normal;min-width:3.5em}
.nb-table tbody th{text-align:left;font-weight:500;background:#fafbfd}
.nb-table a.nb-ref{color:inherit;text-decoration:none;border-bottom:1px dotted #8aa0d0}
.nb-table a.nb-ref:hover{background:#e6edff}
td.nb-selected{background:var(--sel);outline:2px solid #e0b400}
tr.nb-row-average th,tr.nb-row-average td{background:#f3f4f8;font-style:italic}
tr.nb-row-paper th,tr.nb-row-paper td{color:var(--mut)}
tr.nb-row-baseline th,tr.nb-row-baseline td{color:var(--mut)}
figure.nb-plot{margin:10px 0 18px;display:inline-block;vertical-align:top;max-width:100%}
figure.nb-plot svg{max-width:100%;height:auto}figcaption{color:var(--mut);max-width:760px}
.ctl{display:grid;grid-template-columns:90px 1fr;gap:4px 8px;align-items:center;margin-bottom:8px}
.ctl label{color:var(--mut)}.ctl select,.ctl input{width:100%;padding:2px 4px;font:inherit}
#nb-refbox{background:var(--sel);border:1px solid #e0b400;padding:4px 8px;margin:6px 0;display:none}
#nb-count{font-weight:600;margin:6px 0}
.nb-sample{background:#fff;border:1px solid var(--line);border-left:4px solid var(--mut);border-radius:4px;padding:5px 8px;margin:5px 0}
.nb-sample.ok{border-left-color:var(--ok)}.nb-sample.bad{border-left-color:var(--bad)}
.nb-sample .h{font-size:12px}.nb-sample .b{margin-top:2px}
.tag{display:inline-block;background:#eef1f7;border-radius:3px;padding:0 5px;margin-right:4px;font-size:11px}
.tag.err{background:#fde7e6;color:var(--bad)}.tag.gain{background:#e3f5e8;color:var(--ok)}.tag.loss{background:#fde7e6;color:var(--bad)}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f5f8;padding:5px;margin:4px 0;font-size:11.5px;max-height:220px;overflow:auto}
ol.ch{margin:2px 0 2px 18px;padding:0}ol.ch li.gold{font-weight:700;color:var(--ok)}ol.ch li.pred{text-decoration:underline}
button{font:inherit;padding:2px 8px;margin-top:4px}
.warn{color:#8a5a00}
.nb-banner{background:#fff4e5;border:2px solid #d97706;border-radius:6px;padding:8px 14px;margin:10px 0;color:#5c3a00}
.nb-banner ul{margin:6px 0 2px 18px;padding:0}.nb-banner li{margin:3px 0}
"""

JS = r"""
(function(){
'use strict';
const $=id=>document.getElementById(id);
const DATA=JSON.parse($('nb-samples').textContent);
const REFS=JSON.parse($('nb-refs').textContent);
const RUNS=JSON.parse($('nb-runs').textContent);
const KEYS=['run','benchmark','task','mode','shots','filter','error','q','ref','hits','view'];
let state={}; let limit=100;
function val(v,key){ if(Object.prototype.hasOwnProperty.call(v,key)) return v[key];
  let o=v; for(const p of key.split('.')){ if(o!==null&&typeof o==='object'&&Object.prototype.hasOwnProperty.call(o,p)) o=o[p]; else return null; } return o; }
function eq(a,b){ if(a===undefined) a=null; if(b===undefined) b=null;
  if(typeof a==='boolean'||typeof b==='boolean') return a===b;
  if(a===null||b===null) return a===null&&b===null;
  if(typeof a==='number'&&typeof b==='number') return a===b;
  return String(a)===String(b); }
function m1(actual,want){ if(want!==null&&typeof want==='object'&&!Array.isArray(want)&&('not' in want)) return !m1(actual,want.not);
  if(Array.isArray(want)) return want.some(w=>eq(actual,w)); return eq(actual,want); }
function matches(v,f){ if(!f) return true; return Object.keys(f).every(k=>m1(val(v,k),f[k])); }
function parseHash(){ const p=new URLSearchParams(location.hash.replace(/^#/,'')); const s={};
  for(const k of KEYS){ if(p.has(k)) s[k]=p.get(k); } return s; }
function writeHash(){ const p=new URLSearchParams(); for(const k of KEYS){ if(state[k]!==undefined&&state[k]!=='') p.set(k,state[k]); }
  const h=p.toString(); history.replaceState(null,'',h?('#'+h):location.pathname+location.search); }
function options(sel,values,labeler){ const cur=sel.value; sel.innerHTML='';
  const a=document.createElement('option'); a.value=''; a.textContent='(all)'; sel.appendChild(a);
  for(const v of values){ const o=document.createElement('option'); o.value=String(v); o.textContent=labeler?labeler(v):String(v); sel.appendChild(o); }
  sel.value=cur; }
function uniq(key){ const s=new Set(); for(const v of DATA){ const x=val(v,key); if(x!==null&&x!==undefined) s.add(x); }
  return Array.from(s).sort((a,b)=>(typeof a==='number'&&typeof b==='number')?a-b:String(a).localeCompare(String(b))); }
function setup(){
  options($('f-run'),RUNS.map(r=>r.index),i=>RUNS[i].label);
  options($('f-benchmark'),uniq('benchmark')); options($('f-task'),uniq('task'));
  options($('f-mode'),uniq('mode')); options($('f-shots'),uniq('shots'));
  options($('f-error'),uniq('error_type'));
  for(const k of ['run','benchmark','task','mode','shots','filter','error']){
    $('f-'+k).addEventListener('change',e=>{ state[k]=e.target.value; limit=100; writeHash(); render(); }); }
  $('f-q').addEventListener('input',e=>{ state.q=e.target.value; limit=100; writeHash(); render(); });
  $('f-clear').addEventListener('click',()=>{ state={}; limit=100; writeHash(); render(); });
  $('f-hits').addEventListener('change',e=>{ state.hits=e.target.checked?'':'0'; writeHash(); render(); });
  $('f-more').addEventListener('click',()=>{ limit+=200; render(); });
  window.addEventListener('hashchange',()=>{ state=parseHash(); limit=100; render(); if(state.ref) $('nb-browser').scrollTop=0; });
}
function selected(){
  const ref=state.ref?REFS[state.ref]:null; const hits=state.hits!=='0';
  const q=(state.q||'').toLowerCase();
  return DATA.filter(v=>{
    if(ref){ if(v.r!==ref.run||ref.units.indexOf(v.u)<0) return false;
      if(!matches(v,ref.where)) return false; if(hits&&ref.hit&&!matches(v,ref.hit)) return false; }
    if(state.run!==undefined&&state.run!==''&&String(v.r)!==state.run) return false;
    for(const k of ['benchmark','task','mode','shots']){ if(state[k]!==undefined&&state[k]!==''&&String(v[k])!==state[k]) return false; }
    if(state.filter==='correct'&&v.correct!==true) return false;
    if(state.filter==='incorrect'&&v.correct!==false) return false;
    if(state.error!==undefined&&state.error!==''&&String(v.error_type)!==state.error) return false;
    if(q){ const t=[v.id,v.pred,v.gold,v.prompt,v.output,v.u,JSON.stringify(v.meta)].join(' ').toLowerCase(); if(t.indexOf(q)<0) return false; }
    return true; }); }
function el(tag,cls,text){ const e=document.createElement(tag); if(cls) e.className=cls; if(text!==undefined&&text!==null) e.textContent=text; return e; }
function card(v){
  const d=el('div','nb-sample '+(v.correct===true?'ok':(v.correct===false?'bad':'')));
  d.dataset.correct=String(v.correct); d.dataset.task=v.task; d.dataset.unit=v.u; d.dataset.run=String(v.r); d.dataset.error=String(v.error_type);
  const h=el('div','h');
  h.appendChild(el('span','tag',v.correct===true?'✓ correct':(v.correct===false?'✗ incorrect':'?')));
  h.appendChild(el('b',null,RUNS[v.r]?RUNS[v.r].label:String(v.r))); h.appendChild(document.createTextNode(' · '+v.u+' · #'+v.id+' '));
  if(v.error_type) h.appendChild(el('span','tag err',v.error_type));
  if(v.flip) for(const k of Object.keys(v.flip)) h.appendChild(el('span','tag '+v.flip[k],k+': '+v.flip[k]));
  d.appendChild(h);
  const b=el('div','b'); b.textContent='answer: '+(v.pred===null||v.pred===undefined?'(none)':v.pred)+'   gold: '+(v.gold===null||v.gold===undefined?'?':v.gold)
    +(v.p_true!==undefined?('   P(True)='+v.p_true.toFixed(3)):'')+(v.metric?('   '+v.metric+'='+v.score):'');
  d.appendChild(b);
  const det=el('details'); det.appendChild(el('summary',null,'prompt, choices, output, meta'));
  if(v.prompt) det.appendChild(el('pre',null,v.prompt));
  if(v.choices){ const ol=el('ol','ch'); v.choices.forEach((c,i)=>{ const li=el('li',null,c[0]+(c[1]!==null?('   ['+c[1]+']'):''));
      if(v.gold===c[0]) li.classList.add('gold'); if(v.pred===c[0]) li.classList.add('pred'); ol.appendChild(li); }); det.appendChild(ol); }
  if(v.output!==undefined) det.appendChild(el('pre',null,'output: '+v.output));
  det.appendChild(el('pre',null,JSON.stringify(v.meta)));
  d.appendChild(det); return d; }
function render(){
  for(const k of ['run','benchmark','task','mode','shots','filter','error']){ const s=$('f-'+k); s.value=state[k]||''; if(s.value!==(state[k]||'')) s.value=''; }
  $('f-q').value=state.q||''; $('f-hits').checked=state.hits!=='0';
  document.querySelectorAll('td.nb-selected').forEach(e=>e.classList.remove('nb-selected'));
  const box=$('nb-refbox');
  if(state.ref&&REFS[state.ref]){ const r=REFS[state.ref]; box.style.display='block';
    const td=document.getElementById(state.ref); if(td) td.classList.add('nb-selected');
    $('nb-refdesc').textContent=(RUNS[r.run]?RUNS[r.run].label:'')+' · '+r.units.join(', ')+(Object.keys(r.where||{}).length?(' · where '+JSON.stringify(r.where)):'')+(r.hit?(' · counted: '+JSON.stringify(r.hit)):'');
  } else { box.style.display='none'; }
  const sel=selected(); const list=$('nb-list'); list.innerHTML='';
  const n=Math.min(limit,sel.length); for(let i=0;i<n;i++) list.appendChild(card(sel[i]));
  const lim=$('nb-status').dataset.limit;
  $('nb-count').textContent=sel.length+' of '+DATA.length+' samples'+(sel.length>n?(' (showing '+n+')'):'')
    +(lim?(' — this page holds only the first '+lim+' samples of each unit'):'');
  $('f-more').style.display=sel.length>n?'inline-block':'none';
  const st=$('nb-status'); st.dataset.total=String(DATA.length); st.dataset.shown=String(sel.length);
  st.dataset.rendered=String(n); st.dataset.correct=String(sel.filter(v=>v.correct===true).length);
  st.dataset.incorrect=String(sel.filter(v=>v.correct===false).length); st.dataset.state=location.hash;
  st.dataset.selectedCell=state.ref||''; }
function checkRender(){
  const st=$('nb-status');
  st.dataset.tables=String(document.querySelectorAll('table.nb-table').length);
  st.dataset.tableCells=String(document.querySelectorAll('table.nb-table td.nb-cell').length);
  const svgs=Array.from(document.querySelectorAll('figure.nb-plot svg'));
  st.dataset.plots=String(svgs.length);
  st.dataset.plotsRendered=String(svgs.filter(s=>{ const r=s.getBoundingClientRect(); return r.width>50&&r.height>50&&s.querySelectorAll('path,use,line,rect,text').length>5; }).length);
  st.dataset.ready='1'; }
function scrollToView(){ const t=state.view?document.getElementById('sec-'+state.view):(state.ref?document.getElementById(state.ref):null);
  if(t) t.scrollIntoView({block:state.view?'start':'center'}); }
setup(); state=parseHash(); render(); checkRender(); scrollToView();
})();
"""


def _json_script(id_: str, obj: Any) -> str:
    text = to_json(obj, separators=(",", ":"), default=str)
    return (
        f'<script type="application/json" id="{id_}">'
        + text.replace("</", "<\\/").replace("<!--", "<\\!--")
        + "</script>"
    )


def _esc(s: Any) -> str:
    return _html.escape(str(s))


def scroll_box(table_html: str) -> str:
    """A table in its own horizontally scrolling box: a wide table never widens the page."""
    return f'<div class="nb-scroll">{table_html}</div>'


#: The comparison table's columns: the scores and the significance tests first (visible on a
#: laptop screen), the gains / losses links and the metric name after them.
COMPARE_HEAD = (
    ("task", None),
    ("mode", None),
    ("shots", None),
    ("n", "paired items"),
    ("A", None),
    ("B", None),
    ("Δ (B−A)", None),
    ("units", "the benchmark's units the tests go by (groups, blocks, documents)"),
    (
        "McNemar p",
        "exact two-sided McNemar p over the discordant items (a valid test where each unit is one item)",
    ),
    (
        "95% CI",
        "interval of Δ by units (cluster-robust t on units − 1 df); 'too small' under the units it needs",
    ),
    ("p", "two-sided p by units: McNemar's exact test (one item per unit) or the cluster-robust t"),
    ("p (Holm)", "p adjusted by Holm's method over the comparison's groups"),
    ("gains ✗→✓", "wrong in A, right in B (click to list them)"),
    ("losses ✓→✗", "right in A, wrong in B (click to list them)"),
    ("metric", None),
)


def comparison_html(cmp: dict, cid: str, refs: dict) -> str:
    """A comparison as an HTML table; gains / losses cells link to the flipped items (refs are
    added to ``refs``)."""
    from negbench.report.compare import ci_text, p_text

    a, b = cmp["a"], cmp["b"]
    titles = {"A": f"A = {a['label']}", "B": f"B = {b['label']}"}
    h = [
        f'<table class="nb-table nb-cmp" id="{cid}"><thead><tr>'
        + "".join(
            f'<th title="{_esc(t or titles.get(x, x))}">{_esc(x)}</th>' for x, t in COMPARE_HEAD
        )
        + "</tr></thead><tbody>"
    ]
    for gi, g in enumerate(cmp["groups"]):
        ts = g.get("test") or {}
        cells = []
        for kind, n in (("gain", g["gains"]), ("loss", g["losses"])):
            rid = f"{cid}.g{gi}.{kind}"
            refs[rid] = {
                "run": b["index"],
                "units": g["units"],
                "stat": "count",
                "field": None,
                "where": {},
                "hit": {f"flip.{cid}": kind},
                "scale": 1.0,
                "replicate": "unit",
            }
            cells.append(
                f'<td class="nb-cell" id="{rid}"><a class="nb-ref" href="#ref={rid}">{n}</a></td>'
            )
        sig = ' style="font-weight:700"' if g["significant"] else ""
        long = (
            ' class="nb-long"' if len(str(g["task"])) > 22 else ""
        )  # notadataset[sample=…]: wraps
        h.append(
            f"<tr{sig}><th{long}>{_esc(g['task'])}</th><th>{_esc(g['mode'])}</th><th>{g['shots']}</th>"
            f"<td>{g['n_pairs']}</td><td>{g['a_mean']:.3f}</td>"
            f"<td>{g['b_mean']:.3f}</td><td>{g['delta']:+.3f}</td>"
            f"<td>{g.get('n_units', g.get('n_docs', ''))}</td>"
            f"<td>{p_text(g['mcnemar']['exact_p']) if g['mcnemar'] else '–'}</td>"
            f"<td>{ci_text(ts)}</td>"
            f"<td>{p_text(ts.get('p')) if ts.get('p') is not None else 'too small'}</td>"
            f"<td>{p_text(g.get('p_holm'))}</td>"
            + "".join(cells)
            + f'<td class="nb-left">{_esc(g["metric"])}</td></tr>'
        )
    h.append("</tbody></table>")
    return scroll_box("".join(h))


def render(
    *,
    title: str,
    runs: Sequence[dict],
    tables: Sequence,
    plots: Sequence,
    comparisons: Sequence[dict],
    samples: list[dict],
    warnings: Sequence[str] = (),
    notes: Sequence[str] = (),
    sample_limit: int | None = None,
    banner: Sequence[str] = (),
    headline=None,
    lead_plots: Sequence = (),
) -> str:
    """The page.  ``lead_plots``: figures shown first, right under the title (a profile's
    at-a-glance figure), and not again under Plots."""
    refs: dict[str, dict] = {}
    for t in tables:
        refs.update(t.refs())
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    out = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        '<div id="nb-layout"><main id="nb-main">',
        f"<h1>{_esc(title)}</h1>",
    ]
    # a comparison page (negbench compare) has no tables or plots: no empty sections for them
    sections = not (comparisons and not tables and not plots)
    out.append(
        f'<p class="mut">negbench {__version__} · generated {now} · {len(runs)} run(s), '
        + (
            f"{len(tables)} table(s), {len(plots)} plot(s), {len(samples)} samples. Click a "
            "table cell to list the samples behind it.</p>"
            if sections
            else f"{len(comparisons)} comparison(s), {len(samples)} samples. Click a gains or "
            "losses count to list the items that flipped.</p>"
        )
    )
    if banner:  # the runs' own warnings: before anything else
        out.append(
            f'<div class="nb-banner" role="alert"><b>⚠ {len(banner)} warning(s) saved with '
            "the runs: read them before the numbers.</b><ul>"
            + "".join(f"<li>{_esc(b)}</li>" for b in banner)
            + "</ul></div>"
        )
    toc = [("runs", "Runs")] + ([("tables", "Tables"), ("plots", "Plots")] if sections else [])
    if comparisons:
        toc.append(("comparisons", "Comparisons"))
    lead_ids = {p.id for p in lead_plots}
    for p in lead_plots:
        out.append(
            f'<figure class="nb-plot" id="plot-{_esc(p.id)}">{p.svg}'
            f"<figcaption><b>{_esc(p.title)}.</b> {_esc(p.caption)}</figcaption></figure>"
        )
    plots = [p for p in plots if p.id not in lead_ids]
    out.append(
        "<nav>"
        + "".join(
            f'<a href="#" onclick="document.getElementById(\'sec-{k}\')'
            f'.scrollIntoView();return false;">{v}</a>'
            for k, v in toc
        )
        + "</nav>"
    )
    out.append(
        '<h2 id="sec-runs">Runs</h2><div class="nb-scroll"><table class="nb-plain"><thead><tr><th>#</th><th>label</th>'
        "<th>model</th><th>adapter</th><th>tasks</th><th>units</th><th>finished</th><th>git</th>"
        "<th>folder</th></tr></thead><tbody>"
    )
    for r in runs:
        git = r.get("git") or {}
        gtxt = (
            (str(git.get("commit") or "")[:10] + (" (dirty)" if git.get("dirty") else ""))
            if git
            else ""
        )
        fin = str(r.get("finished") or "")
        adapter_cls = ' class="nb-wrap nb-path"' if r.get("adapter") else ""  # a long path wraps
        out.append(
            f'<tr><td>{r["index"]}</td><td class="nb-wrap">{_esc(r["label"])}</td>'
            f'<td class="nb-wrap nb-path">{_esc(r["model"])}</td>'
            f"<td{adapter_cls}>{_esc(r.get('adapter') or '')}</td>"
            f'<td class="nb-wrap">{_esc(", ".join(r["tasks"]))}</td>'
            f'<td>{len(r["units"])}</td><td title="{_esc(fin)}">{_esc(fin[:16].replace("T", " "))}</td>'
            f"<td>{_esc(gtxt)}</td>"
            f'<td class="nb-wrap nb-path">{_esc(r["path"])}</td></tr>'
        )
    out.append("</tbody></table></div>")
    if headline is not None and headline.rows:
        out.append(
            f'<h3>{_esc(headline.title)}</h3><p class="cap">{_esc(headline.caption)}</p>'
            + scroll_box(headline.to_html())
            + "".join(f'<p class="cap">{_esc(n)}</p>' for n in headline.notes)
        )
    for w in warnings:
        out.append(f'<p class="warn">⚠ {_esc(w)}</p>')
    for n in notes:
        out.append(f'<p class="mut">{_esc(n)}</p>')
    if sections:
        out.append('<h2 id="sec-tables">Tables</h2>')
    bench = None
    for t in tables:
        if t.benchmark != bench:
            bench = t.benchmark
        out.append(
            f'<section class="nb-tsec" data-benchmark="{_esc(t.benchmark)}">'
            f"<h3>{_esc(t.title)}</h3>"
            + (
                f'<p class="cap">{_esc(t.caption)}'
                + (f" <i>Shape: {_esc(t.paper)}.</i>" if t.paper else "")
                + "</p>"
                if t.caption or t.paper
                else ""
            )
            + scroll_box(t.to_html())
            + "".join(f'<p class="cap">{_esc(n)}</p>' for n in t.all_notes())
            + "</section>"
        )
    if not tables and sections:
        out.append('<p class="mut">No tables.</p>')
    if sections:
        out.append('<h2 id="sec-plots">Plots</h2>')
    for p in plots:
        out.append(
            f'<figure class="nb-plot" id="plot-{_esc(p.id)}">{p.svg}'
            f"<figcaption><b>{_esc(p.title)}.</b> {_esc(p.caption)}</figcaption></figure>"
        )
    if not plots and sections and not lead_ids:
        out.append('<p class="mut">No plots (one shot setting per model and no probabilities).</p>')
    if comparisons:
        out.append('<h2 id="sec-comparisons">Comparisons</h2>')
        for i, c in enumerate(comparisons):
            cid = c.get("_id", f"cmp{i}")
            out.append(
                f"<h3>A = {_esc(c['a']['label'])} vs B = {_esc(c['b']['label'])}</h3>"
                '<p class="cap">Items paired by doc id; gains = wrong in A and right in B, '
                "losses = the reverse (click to list them); McNemar exact p over the discordant "
                f"pairs; paired bootstrap over documents ({c['settings']['bootstrap_resamples']} "
                f"resamples, seed {c['settings']['seed']}). Bold: both p &lt; {c['settings']['alpha']}.</p>"
            )
            out.append(comparison_html(c, cid, refs))
            for w in c.get("warnings", []):
                out.append(f'<p class="warn">⚠ {_esc(w)}</p>')
            if c.get("skipped"):
                out.append(
                    '<p class="cap">Not compared: '
                    + _esc(", ".join(f"{x['unit']} ({x['reason']})" for x in c["skipped"]))
                    + ".</p>"
                )
    out.append("</main>")
    out.append(
        '<aside id="nb-browser"><h2 style="margin-top:4px">Samples</h2><div class="ctl">'
        '<label for="f-run">run</label><select id="f-run"></select>'
        '<label for="f-benchmark">benchmark</label><select id="f-benchmark"></select>'
        '<label for="f-task">task</label><select id="f-task"></select>'
        '<label for="f-mode">mode</label><select id="f-mode"></select>'
        '<label for="f-shots">shots</label><select id="f-shots"></select>'
        '<label for="f-filter">result</label><select id="f-filter"><option value="">(all)</option>'
        '<option value="correct">correct</option><option value="incorrect">incorrect</option></select>'
        '<label for="f-error">error type</label><select id="f-error"></select>'
        '<label for="f-q">text</label><input id="f-q" type="search" placeholder="id, answer, prompt…">'
        '</div><div id="nb-refbox"><b>Samples behind a table cell</b><br><span id="nb-refdesc"></span><br>'
        '<label><input type="checkbox" id="f-hits" checked> only the counted ones</label></div>'
        '<button id="f-clear">clear filters</button><div id="nb-count"></div><div id="nb-list"></div>'
        '<button id="f-more">show more</button></aside></div>'
    )
    out.append(f'<div id="nb-status" hidden data-limit="{sample_limit or ""}"></div>')
    out.append(_json_script("nb-samples", samples))
    out.append(_json_script("nb-refs", refs))
    out.append(_json_script("nb-runs", [{"index": r["index"], "label": r["label"]} for r in runs]))
    out.append(f"<script>{JS}</script></body></html>")
    return "\n".join(out)
