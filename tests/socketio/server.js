// A Socket.IO room server for barrage's interop test: the rooms, the broadcast and Engine.IO
// are Socket.IO's own; this file is the glue. A client emits "join" and is put into the
// newest room with a free seat (rooms of ROOM_SIZE); "say" is emitted to the whole room,
// sender included. Counts go to the file named by argv[2] on every disconnect.
"use strict";
const { Server } = require("socket.io");
const http = require("http");
const fs = require("fs");

const countFile = process.argv[2];
const ROOM_SIZE = Number(process.argv[3] || 4);
const counts = { connects: 0, joins: 0, says: 0, deliveries: 0, disconnects: 0 };
let joined = 0;

const httpServer = http.createServer();
const io = new Server(httpServer, {
  transports: ["websocket"],
  pingInterval: 200,
  pingTimeout: 5000,
});

io.on("connection", (socket) => {
  counts.connects++;
  let room = null;
  socket.on("join", () => {
    room = "r" + Math.floor(joined++ / ROOM_SIZE);
    socket.join(room);
    counts.joins++;
    const size = io.sockets.adapter.rooms.get(room).size;
    socket.emit("joined", { room, size });
    socket.to(room).emit("member", { room, size });
  });
  socket.on("say", (text) => {
    if (room === null) return;
    counts.says++;
    counts.deliveries += io.sockets.adapter.rooms.get(room).size;
    io.to(room).emit("msg", text);
  });
  socket.on("disconnect", () => {
    counts.disconnects++;
    fs.writeFileSync(countFile + ".tmp", JSON.stringify(counts));
    fs.renameSync(countFile + ".tmp", countFile);
  });
});

httpServer.listen(0, "127.0.0.1", () => {
  console.log("ready " + httpServer.address().port);
});
// Backstop: the test stops it long before.
setTimeout(() => process.exit(0), 60000).unref();
