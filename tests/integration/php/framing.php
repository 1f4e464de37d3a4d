<?php
// Fields that frame or steer the connection, each of a size the ones weft
// keeps back also have, and one of each size that must pass.
header('Connection: close');
header('Keep-Alive: timeout=99');
header('Transfer-Encoding: identity');
header('X-Accel-Buffering: no');
header('X-Accel-Expires: 60');
header('X-Accel-Ab: 1');
header('Connectiox: 10');
header('Content-Lengtx: 14');
header('Transfer-Encodinx: 17');
header('X-Accelerated: yes');
echo "framed\n";
