-- bench/script-cost.sh: every request built, every reply framed and judged by the script.
function request(conn, seq)
  return "hello barrage\n"
end

function frame(buf)
  local e = buf:find("\n", 1, true)
  return e
end

function response(conn, reply)
  return reply == "hello barrage\n"
end
