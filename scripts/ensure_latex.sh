#!/usr/bin/env bash
# The survey tests compile report.tex + references.bib: they need pdflatex and bibtex
# (Debian's texlive-latex-base; -recommended for the usual packages a report uses).
set -euo pipefail

if ! command -v pdflatex >/dev/null || ! command -v bibtex >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "need root to install texlive-latex-base" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    texlive-latex-base texlive-latex-recommended >/dev/null
fi
echo "pdflatex present: $(command -v pdflatex)"
