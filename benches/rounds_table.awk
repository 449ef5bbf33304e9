# The table of a ratio bench's rounds (benches/ceiling.sh, benches/moderation.sh): one row per
# route from lines "route|bytes|load|bare rps p50 p99|botlist rps p50 p99", one line a round.
# Medians over the rounds, the ratio's range, and the load: the last round's (loads=last) or
# each round's (loads=each). digits: the ratio's decimals.
#   awk -F'|' -v digits=2 -v loads=last -f benches/rounds_table.awk ROWS
function median(list, n,   i, j, t, a) {
  split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lo(list, n,   a, i, m) { split(list, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function hi(list, n,   a, i, m) { split(list, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
{
  if (!($1 in n)) { order[++routes] = $1 }
  n[$1]++; bytes[$1] = $2
  load[$1] = loads == "each" ? load[$1] (load[$1] == "" ? "" : ", ") $3 : $3
  split($4, b, " "); split($5, o, " ")
  brps[$1] = brps[$1] " " b[1]; bp50[$1] = bp50[$1] " " b[2]; bp99[$1] = bp99[$1] " " b[3]
  orps[$1] = orps[$1] " " o[1]; op50[$1] = op50[$1] " " o[2]; op99[$1] = op99[$1] " " o[3]
  ratio[$1] = ratio[$1] " " (b[1] > 0 ? o[1] / b[1] : 0)
}
END {
  format = sprintf("| %%s | %%d | %%.0f | %%.0f | %%.%df (%%.%df–%%.%df) | %%.2f / %%.2f | %%.2f / %%.2f | %%s |\n", digits, digits, digits)
  for (i = 1; i <= routes; i++) {
    r = order[i]; c = n[r]
    printf format, r, bytes[r],
      median(orps[r], c), median(brps[r], c), median(ratio[r], c), lo(ratio[r], c), hi(ratio[r], c),
      median(op50[r], c), median(op99[r], c), median(bp50[r], c), median(bp99[r], c), load[r]
  }
}
