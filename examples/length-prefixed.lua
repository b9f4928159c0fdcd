-- A length-prefixed binary protocol through a script (barrage run tcp://HOST:PORT --script FILE).
-- Each request is a u16be length, then the connection's number and the request's sequence
-- (u32be each); replies are framed by the same prefix and each one is checked against the
-- oldest request its connection has in flight. Against `barrage serve echo`:
--
--   barrage serve echo --listen 127.0.0.1:7000 &
--   barrage run tcp://127.0.0.1:7000 --script examples/length-prefixed.lua -c 4 -n 2000
--
-- Each connection's request 7 is judged `reply_error`, to show a script naming an error class.

-- A connection opened: its state is the `conn` table (conn.id is its number).
function init(conn)
  conn.q, conn.head, conn.tail = {}, 1, 0
end

-- The bytes of request `seq` of this connection.
function request(conn, seq)
  conn.tail = conn.tail + 1
  conn.q[conn.tail] = seq
  return string.pack(">I2I4I4", 8, conn.id, seq)
end

-- How long the next whole reply at the start of `buf` is; nil while the prefix is not here.
function frame(buf)
  if #buf < 2 then return nil end
  return 2 + string.unpack(">I2", buf)
end

-- Is the reply right? nothing/true: yes; false: a mismatch; a string: that error class.
function response(conn, reply)
  local _, id, seq = string.unpack(">I2I4I4", reply)
  local want = conn.q[conn.head]
  conn.q[conn.head] = nil
  conn.head = conn.head + 1
  if id ~= conn.id or seq ~= want then return false end
  if seq == 7 then return "reply_error" end
end
