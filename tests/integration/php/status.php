<?php
// A CGI Status header, as a script behind any FastCGI server may send it.
header('Status: 404 Not Found');
echo "gone\n";
