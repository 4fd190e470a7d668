// The book's search box when the book is opened from disk (file://.../build/book/index.html).
//
// The Material theme's search runs in a web worker that fetches search/search_index.json;
// a browser allows neither for a page opened from a file, so the theme hides its search box.
// This script then takes the box over: it loads search/search_index.js (the same index as a
// script, written after each build by scripts/lib/book_search_index.py), finds the sections
// that contain every word typed, and lists them in the theme's result panel. When the book
// is served over http (scripts/docs.sh --serve), the theme's search works and this script
// does nothing.
(function () {
  "use strict";

  var box = document.querySelector("[data-md-component=search]");
  if (!box || (!box.hidden && window.location.protocol !== "file:")) {
    return; // the theme's own search is running
  }
  var input = box.querySelector("[data-md-component=search-query]");
  var result = box.querySelector("[data-md-component=search-result]");
  var meta = result.querySelector(".md-search-result__meta");
  var list = result.querySelector(".md-search-result__list");
  var toggle = document.getElementById("__search"); // checked: the search panel is open

  var config = JSON.parse(document.getElementById("__config").textContent);
  var base = config.base || ".";
  var words = config.translations || {};
  var MAX_SHOWN = 20;

  box.hidden = false;

  // The index, loaded once, the first time the reader uses the box.
  var index = null;
  function loadIndex() {
    if (!index) {
      index = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = base + "/search/search_index.js";
        script.onload = function () {
          window.wbSearchIndex ? resolve(window.wbSearchIndex.docs) : reject();
        };
        script.onerror = reject;
        document.head.appendChild(script);
      });
    }
    return index;
  }

  function termsOf(query) {
    return query.toLowerCase().split(/[\s\-]+/).filter(function (t) { return t.length > 0; });
  }

  function count(haystack, needle) {
    var n = 0;
    for (var at = haystack.indexOf(needle); at >= 0 && n < 10; at = haystack.indexOf(needle, at + 1)) n++;
    return n;
  }

  function escapeRegExp(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  // Every entry (a page or one of its sections) that holds all the terms, best first:
  // a term in the title counts for more than one in the text, a whole word more, the whole
  // title most.
  function search(docs, terms) {
    var hits = [];
    var wholeWords = terms.map(function (t) { return new RegExp("\\b" + escapeRegExp(t) + "\\b"); });
    docs.forEach(function (doc) {
      var title = doc.title.toLowerCase(), text = doc.text.toLowerCase(), score = 0;
      for (var i = 0; i < terms.length; i++) {
        var inTitle = title.indexOf(terms[i]) >= 0, inText = count(text, terms[i]);
        if (!inTitle && !inText) return;
        score += (wholeWords[i].test(title) ? 20 : inTitle ? 10 : 0) + inText;
      }
      if (title.replace(/\s*¶$/, "") === terms.join(" ")) score += 100; // the query is the title
      hits.push({ doc: doc, score: score });
    });
    return hits.sort(function (a, b) { return b.score - a.score; });
  }

  // A stretch of text around the first term, as DOM nodes with the terms in <mark>.
  function teaser(text, terms) {
    var at = Math.max(0, text.toLowerCase().indexOf(terms[0]));
    var start = Math.max(0, at - 60), end = Math.min(text.length, at + 160);
    var piece = (start > 0 ? "… " : "") + text.slice(start, end) + (end < text.length ? " …" : "");
    var pattern = new RegExp("(" + terms.map(escapeRegExp).join("|") + ")", "gi");
    var p = document.createElement("p");
    p.className = "md-search-result__teaser";
    piece.split(pattern).forEach(function (part, i) {
      if (i % 2) {
        var mark = document.createElement("mark");
        mark.textContent = part;
        p.appendChild(mark);
      } else {
        p.appendChild(document.createTextNode(part));
      }
    });
    return p;
  }

  function pageTitles(docs) {
    var titles = {};
    docs.forEach(function (doc) {
      if (doc.location.indexOf("#") < 0) titles[doc.location] = doc.title;
    });
    return titles;
  }

  function say(key, fallback, n) {
    meta.textContent = (words[key] || fallback).replace("#", n);
  }

  function show(docs, query) {
    var terms = termsOf(query);
    list.textContent = "";
    if (query.trim().length < 2 || !terms.length) {
      say("search.result.placeholder", "Type to start searching");
      return;
    }
    var hits = search(docs, terms), titles = pageTitles(docs);
    if (!hits.length) say("search.result.none", "No matching documents");
    else if (hits.length === 1) say("search.result.one", "1 matching document");
    else say("search.result.other", "# matching documents", hits.length);

    hits.slice(0, MAX_SHOWN).forEach(function (hit) {
      var doc = hit.doc, page = doc.location.split("#")[0];
      var li = document.createElement("li");
      li.className = "md-search-result__item";
      var a = document.createElement("a");
      a.className = "md-search-result__link";
      a.href = base + "/" + doc.location;
      var article = document.createElement("article");
      article.className = "md-search-result__article";
      var h = document.createElement("h1");
      h.className = "md-search-result__title";
      h.textContent = doc.title + (page !== doc.location && titles[page] ? " · " + titles[page] : "");
      article.appendChild(h);
      if (doc.text) article.appendChild(teaser(doc.text, terms));
      a.appendChild(article);
      li.appendChild(a);
      list.appendChild(li);
    });
  }

  function update() {
    var query = input.value;
    loadIndex().then(function (docs) {
      if (input.value === query) show(docs, query); // skip answers to queries typed over
    }, function () {
      list.textContent = "";
      meta.textContent = "The search index (search/search_index.js) could not be loaded: rebuild the book with scripts/docs.sh";
    });
  }

  input.addEventListener("focus", function () {
    toggle.checked = true;
    loadIndex();
  });
  input.addEventListener("input", update);
  input.form.addEventListener("reset", function () {
    setTimeout(update, 0); // after the form has cleared the box
    input.focus();
  });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      var first = list.querySelector("a");
      if (first) window.location.href = first.href;
      event.preventDefault();
    } else if (event.key === "Escape") {
      toggle.checked = false;
      input.blur();
    }
  });
})();
