int kjit_placeholder = 0;
