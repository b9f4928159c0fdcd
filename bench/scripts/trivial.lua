-- The trivial script of bench/script-cost.sh: the same request as -m 'hello barrage\n'.
function request(conn, seq)
  return "hello barrage\n"
end
