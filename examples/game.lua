-- The binary game protocol of `barrage serve frames` (docs/protocols.md, "serve frames"),
-- spoken by the steps of examples/game-rooms.toml: each message is a frame (a header byte
-- 0x80, a u16be length) holding a typed object {c: byte 0, a: short action, p: {params}}.

-- A key of an object: a u16be length and its bytes.
local function key(k) return string.pack(">s2", k) end

-- Typed values: a string (0x08, u16be length), a byte array (0x0a, i32be length).
local function str(k, v) return key(k) .. string.pack(">Bs2", 0x08, v) end
local function bytes(k, v) return key(k) .. string.pack(">Bs4", 0x0a, v) end

-- A message frame for `action` with the encoded entries `params`.
local function message(action, params)
  local obj = string.pack(">BI2", 0x12, 3)
    .. key("c") .. string.pack(">BB", 0x02, 0)
    .. key("a") .. string.pack(">Bi2", 0x03, action)
    .. key("p") .. string.pack(">BI2", 0x12, #params) .. table.concat(params)
  return string.pack(">BI2", 0x80, #obj) .. obj
end

local LOGIN, JOIN, LEAVE, SAY = 1, 4, 5, 7

-- Where a reply ends: 3 bytes of header and the length they give (5 and a u32be for 0x88).
function frame(buf)
  if #buf < 3 then return nil end
  if buf:byte(1) == 0x88 then
    if #buf < 5 then return nil end
    return 5 + string.unpack(">I4", buf, 2)
  end
  return 3 + string.unpack(">I2", buf, 2)
end

-- A reply's action (the i16 at byte 16) and whether it is an error (its parameters begin
-- with the key "ec").
local function action(reply) return (string.unpack(">i2", reply, 16)) end
local function failed(reply) return reply:sub(26, 27) == "ec" end

-- The steps' messages: `text` is the step's `send`, rendered.
function login(conn, name) return message(LOGIN, { str("un", name) }) end
function join(conn) return message(JOIN, {}) end
function say(conn, text) return message(SAY, { bytes("m", text) }) end
function leave(conn) return message(LEAVE, {}) end

-- The steps' checks: the answer with the step's action is its reply (an error answer fails
-- the step); any other frame (a room's message, a member count) is not.
local function answer(want)
  return function(conn, reply)
    if action(reply) ~= want then return false end
    if failed(reply) then return "reply_error" end
  end
end
logged_in, joined, left = answer(LOGIN), answer(JOIN), answer(LEAVE)
