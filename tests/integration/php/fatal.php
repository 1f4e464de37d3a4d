<?php
echo "before\n";
this_function_does_not_exist();
