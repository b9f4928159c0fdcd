
barrage_echo.protobarrage"ü
Message
text (	Rtext
number (Rnumber
payload (Rpayload4
labels (2.barrage.Message.LabelsEntryRlabels
tags (	Rtags&
inner (2.barrage.MessageRinner9
LabelsEntry
key (	Rkey
value (	Rvalue:82Ã
Echo*
Echo.barrage.Message.barrage.Message.
Stream.barrage.Message.barrage.Message0/
Collect.barrage.Message.barrage.Message(.
Chat.barrage.Message.barrage.Message(0bproto3